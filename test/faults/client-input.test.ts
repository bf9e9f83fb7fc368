// Client input that once reached a 500: node ids that are Object.prototype names, and values
// nested thousands of levels deep. Each is a 4xx in its interface's shape, or a job that runs.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, expectValid, startTestServer, v, type TestServer } from "../server/helpers.ts";
import { reasons } from "../node-errors.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

const PROTO_NAMES = ["valueOf", "constructor", "toString", "__proto__", "hasOwnProperty"];

/** POSTs raw JSON text (a `__proto__` key survives only in text). */
function postText(path: string, body: string) {
  return s.api.request("POST", path, { body, headers: { "content-type": "application/json" } });
}

describe("node ids named like Object.prototype members", () => {
  it.each(PROTO_NAMES)("a graph with node %s that fails validation is 422 invalid_workflow naming it (v2)", async (id) => {
    const unknownClass = `{"workflow":{"${id}":{"class_type":"Nope","inputs":{}}}}`;
    const res = await postText("/api/v2/jobs", unknownClass);
    expectError(res, 422, "invalid_workflow", v.response_createJob_422);
    expect(Object.keys(res.body.error.details.node_errors)).toContain(id);
    const badLink = `{"workflow":{"${id}":{"class_type":"PreviewAny","inputs":{"source":["9",0]}}}}`;
    const linked = await postText("/api/v2/jobs", badLink);
    expectError(linked, 422, "invalid_workflow");
    expect(reasons(linked.body.error.details.node_errors)[id]).toEqual([{ field: "source", reason: "bad_link" }]);
  });

  it.each(PROTO_NAMES)("a graph with node %s that fails validation is 400 with node_errors (hosted /api/prompt)", async (id) => {
    const res = await postText("/api/prompt", `{"prompt":{"${id}":{"class_type":"PreviewAny","inputs":{"source":["9",0]}}}}`);
    expect(res.status, res.text).toBe(400);
    expect(Object.keys(res.body.node_errors)).toEqual([id]);
    const missing = await postText("/api/prompt", `{"prompt":{"${id}":{"class_type":"Nope","inputs":{}}}}`);
    expect(missing.status, missing.text).toBe(400);
    expect(missing.body.error.type).toBe("missing_node_type");
  });

  it("a link to a node that does not exist, named like a prototype member, is bad_link", async () => {
    const res = await s.api.post("/api/v2/jobs", { workflow: { "1": { class_type: "PreviewAny", inputs: { source: ["constructor", 0] } } } });
    expectError(res, 422, "invalid_workflow");
    expect(reasons(res.body.error.details.node_errors)["1"]).toEqual([{ field: "source", reason: "bad_link" }]);
  });

  it.each(PROTO_NAMES)("a valid graph whose nodes are named %s runs, and its history names them", async (id) => {
    const out = id === "hasOwnProperty" ? "valueOf" : "hasOwnProperty";
    const body = `{"workflow":{"${id}":{"class_type":"PrimitiveString","inputs":{"value":"a"}},"${out}":{"class_type":"FlowgateSaveFile","inputs":{"text":["${id}",0],"filename_prefix":"p","extension":"txt"}}}}`;
    const res = await postText("/api/v2/jobs", body);
    expect(res.status, res.text).toBe(201);
    const done = await s.api.waitTerminal(res.body.id);
    expect(done.status).toBe("succeeded");
    const history = await s.api.get(`/api/history/${res.body.id}`);
    expect(history.status).toBe(200);
    expect(Object.keys(history.body[res.body.id].outputs)).toEqual([out]);
  });
});

describe("values nested without bound", () => {
  const deep = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;
  const graph = (node1: string) => `{"1":${node1},"2":{"class_type":"PreviewAny","inputs":{"source":["1",0]}}}`;
  const inMeta = graph(`{"class_type":"PrimitiveString","inputs":{"value":"a"},"_meta":{"title":"t","x":${deep(4500)}}}`);
  const inUnknownInput = graph(`{"class_type":"PrimitiveString","inputs":{"value":"a","extra":${deep(4500)}}}`);

  it("a value 4,500 levels deep in _meta or an unknown input is 400 invalid_request too_deep (v2)", async () => {
    for (const [g, field] of [
      [inMeta, "workflow.1._meta.x"],
      [inUnknownInput, "workflow.1.inputs.extra"],
    ] as const) {
      const res = await postText("/api/v2/jobs", `{"workflow":${g}}`);
      expectError(res, 400, "invalid_request", v.response_createJob_400);
      expect(res.body.error.details.fields).toEqual([{ field, reason: "too_deep" }]);
    }
  });

  it("the same on the hosted interface is 400 in ComfyUI's shape", async () => {
    for (const g of [inMeta, inUnknownInput]) {
      const res = await postText("/api/prompt", `{"prompt":${g}}`);
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.type).toBe("invalid_request");
    }
  });

  it("nesting within the bound is accepted and stored", async () => {
    const res = await postText(
      "/api/v2/jobs",
      `{"workflow":${graph(`{"class_type":"PrimitiveString","inputs":{"value":"a"},"_meta":{"title":"t","x":${deep(50)}}}`)}}`,
    );
    expect(res.status, res.text).toBe(201);
    expectValid(v.response_createJob_201, res.body);
    expect((await s.api.waitTerminal(res.body.id)).status).toBe("succeeded");
  });
});

describe("requests the HTTP parser refuses", () => {
  /** Writes raw bytes on a fresh connection and reads everything until the server closes. */
  function raw(text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(new URL(s.url).port), "127.0.0.1", () => socket.write(text));
      let out = "";
      socket.on("data", (d) => (out += d));
      socket.on("close", () => resolve(out));
      socket.on("error", reject);
    });
  }

  it.each([
    ["a bad Content-Length", "POST /api/v2/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}", 400],
    [
      "Content-Length with Transfer-Encoding",
      "POST /api/v2/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      400,
    ],
    ["a control character in a header", "GET /api/v2/jobs HTTP/1.1\r\nHost: x\r\nX-Note: a\x01b\r\n\r\n", 400],
    ["a 100 KB query string", `GET /api/v2/jobs?x=${"a".repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
    ["a request line that is not HTTP", "HELLO\r\n\r\n", 400],
  ])("%s is answered in the envelope (invalid_request), not reset", async (_what, request, status) => {
    const answer = await raw(request);
    const [head, body] = answer.split("\r\n\r\n");
    expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
    expect(head!.toLowerCase()).toContain("content-type: application/json");
    const json = JSON.parse(body!);
    expectValid(v.schema_ErrorEnvelope, json);
    expect(json.error.code).toBe("invalid_request");
  });
});

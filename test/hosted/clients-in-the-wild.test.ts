// The hosted interface and v2 downloads spoken exactly as clients nobody here wrote speak them:
// ComfyUI's own example scripts (Python urllib: no JSON Content-Type, bare routes), SDKs that
// post JSON as text/plain and send the key as an X-API-Key header on the socket upgrade, and
// the official v2 SDK's download (GET .../content with the key, following the 302 to a link
// that needs none).
import { execFile } from "node:child_process";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import * as v from "../../generated/validators.js";
import { startTestServer, until, type TestServer } from "./hosted-server.ts";
import { delayGraph } from "../fixtures/graphs.ts";

const KEY = "wild-key-0123456789";
const graph = (text: string) => ({
  "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: text.length * 4099 } },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: text } },
});
const slow = (text: string) => delayGraph(30, text);

/** A POST with exactly the headers given (fetch would add a Content-Type for a string body). */
function rawPost(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

function multipart(): { body: string; type: string } {
  const boundary = "----flowgate-wild";
  return {
    body: `--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\n{}\r\n--${boundary}--\r\n`,
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

describe("ComfyUI's example scripts against an open server", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(["--concurrency", "1"]);
  });
  afterAll(async () => server.stop());

  // script_examples/basic_api_example.py and the HTTP half of websockets_api_example.py, in the
  // same calls: urllib.request.Request(url + "/prompt", data=...) (urllib sends
  // application/x-www-form-urlencoded), /history/{id}, then /view (a 302 urllib follows).
  const PYTHON = `
import json, sys, time, urllib.request, urllib.parse
server = sys.argv[1]
prompt = json.loads(sys.argv[2])
data = json.dumps({"prompt": prompt, "client_id": "example"}).encode("utf-8")
req = urllib.request.Request("http://{}/prompt".format(server), data=data)
prompt_id = json.loads(urllib.request.urlopen(req).read())["prompt_id"]
for _ in range(600):
    with urllib.request.urlopen("http://{}/history/{}".format(server, prompt_id)) as response:
        history = json.loads(response.read())
    if prompt_id in history:
        break
    time.sleep(0.05)
images = []
for node_id, node_output in history[prompt_id]["outputs"].items():
    for image in node_output.get("images", []):
        url_values = urllib.parse.urlencode({"filename": image["filename"], "subfolder": image["subfolder"], "type": image["type"]})
        with urllib.request.urlopen("http://{}/view?{}".format(server, url_values)) as response:
            images.append(len(response.read()))
print(json.dumps({"prompt_id": prompt_id, "images": images}))
`;

  const python = () => new Promise<string | null>((resolve) => execFile("python3", ["--version"], (err) => resolve(err ? null : "python3")));

  it("HOST-2/HOST-5: basic_api_example.py queues, reads history and downloads with urllib, unchanged", async (ctx) => {
    const py = await python();
    if (!py) return ctx.skip();
    const host = new URL(server.url).host;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(py, ["-c", PYTHON, host, JSON.stringify(graph("example"))], { timeout: 60_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const result = JSON.parse(out) as { prompt_id: string; images: number[] };
    expect(result.images.length).toBe(1);
    expect(result.images[0]).toBeGreaterThan(0);
  });

  it("HOST-2: a prompt with no Content-Type at all, and one sent as text/plain, are read as JSON", async () => {
    for (const headers of [{}, { "content-type": "text/plain;charset=UTF-8" }] as Array<Record<string, string>>) {
      const res = await rawPost(`${server.url}/prompt`, JSON.stringify({ prompt: graph("plain"), client_id: "x" }), headers);
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect(v.schema_HostedPromptResult(res.json)).toBe(true);
    }
  });

  it("a body that is not JSON is 400 in ComfyUI's shape on every hosted JSON route, a form included", async () => {
    const form = multipart();
    for (const route of ["/api/prompt", "/api/queue", "/prompt"]) {
      for (const [body, type] of [
        ["not json", "text/plain"],
        [form.body, form.type],
      ] as const) {
        const res = await rawPost(`${server.url}${route}`, body, { "content-type": type });
        expect(res.status, `${route} ${type}`).toBe(400);
        expect(v.schema_HostedError(res.json), JSON.stringify(res.json)).toBe(true);
      }
    }
  });

  it("ERR-1: a form sent to a v2 JSON operation is 400 unsupported_content_type in the envelope, never a 500", async () => {
    const form = multipart();
    for (const route of ["/api/v2/jobs", "/api/v2/assets/from-hash"]) {
      const res = await rawPost(`${server.url}${route}`, form.body, { "content-type": form.type });
      expect(res.status, route).toBe(400);
      expect(v.schema_ErrorEnvelope(res.json)).toBe(true);
      expect(res.json.error.code).toBe("invalid_request");
      expect(res.json.error.details.fields[0].reason).toBe("unsupported_content_type");
    }
  });
});

describe("SDK habits against a server with a key", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(["--token", KEY, "--concurrency", "1"]);
  });
  afterAll(async () => server.stop());

  function socket(headers: Record<string, string>): Promise<{ ws: WebSocket; messages: Array<{ type: string; data: any }> }> {
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/ws?clientId=${crypto.randomUUID()}`, { headers });
    const messages: Array<{ type: string; data: any }> = [];
    ws.on("message", (data, isBinary) => void (isBinary || messages.push(JSON.parse(String(data)))));
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve({ ws, messages }));
      ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
      ws.once("error", reject);
    });
  }

  it("WS-1/AUTH-5: the socket takes the key as an X-API-Key header on the upgrade, and refuses a wrong one", async () => {
    const { ws, messages } = await socket({ "X-API-Key": KEY });
    await until(async () => (messages.some((m) => m.type === "status") ? true : undefined));
    ws.close();
    await expect(socket({ "X-API-Key": "wrong" })).rejects.toThrow(/401/);
  });

  it("HOST-7: deleting a pending prompt sends only `status`, as ComfyUI does", async () => {
    const { ws, messages } = await socket({ "X-API-Key": KEY });
    const post = (route: string, body: unknown) => rawPost(`${server.url}${route}`, JSON.stringify(body), { "X-API-Key": KEY, "content-type": "text/plain" });
    const running = (await post("/api/prompt", { prompt: slow("run") })).json.prompt_id as string;
    const pending = (await post("/api/prompt", { prompt: slow("wait") })).json.prompt_id as string;
    await until(async () => (messages.some((m) => m.type === "execution_start" && m.data.prompt_id === running) ? true : undefined));
    const before = messages.length;
    expect((await post("/api/queue", { delete: [pending] })).status).toBe(200);
    await until(async () => {
      const s = await (await fetch(`${server.url}/api/job/${pending}/status`, { headers: { "X-API-Key": KEY } })).json();
      return (s as { status: string }).status === "cancelled" ? true : undefined;
    });
    // The queue update for the deletion arrives; nothing about the deleted prompt's execution does.
    await until(async () => (messages.slice(before).some((m) => m.type === "status") ? true : undefined));
    await post("/api/interrupt", {});
    await until(async () => (messages.some((m) => m.type === "execution_interrupted" && m.data.prompt_id === running) ? true : undefined));
    const aboutPending = messages.filter((m) => m.type !== "status" && m.data?.prompt_id === pending);
    expect(aboutPending).toEqual([]);
    ws.close();
  });

  it("AST-4: GET .../content with the key answers 302 to the signed link, which a client follows without credentials (Range too)", async () => {
    const form = new FormData();
    const bytes = new TextEncoder().encode("the bytes of an asset, for a redirect");
    form.append("file", new Blob([bytes]), "note.txt");
    const up = await fetch(`${server.url}/api/v2/assets`, { method: "POST", headers: { authorization: `Bearer ${KEY}` }, body: form });
    const asset = (await up.json()) as { id: string; url: string; created_new: boolean; expires_at: string | null };
    expect(up.status).toBe(201);
    expect(asset.created_new).toBe(true);
    expect(Date.parse(asset.expires_at!)).toBeGreaterThan(Date.now());

    const content = `${server.url}/api/v2/assets/${asset.id}/content`;
    const redirect = await fetch(content, { headers: { authorization: `Bearer ${KEY}` }, redirect: "manual" });
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get("location")!;
    expect(new URL(location).searchParams.get("signature")).toBeTruthy();
    // As the SDK's getAssetContent(): fetch with the key, following the redirect.
    const followed = await fetch(content, { headers: { authorization: `Bearer ${KEY}`, range: "bytes=4-8" } });
    expect(followed.status).toBe(206);
    expect(await followed.text()).toBe("bytes");
    // As whoever the SDK's getDownloadUrl() handed the link to: no key at all.
    const anonymous = await fetch(location);
    expect(anonymous.status).toBe(200);
    expect(new Uint8Array(await anonymous.arrayBuffer())).toEqual(bytes);
    // Without the key the unsigned path still refuses.
    expect((await fetch(content, { redirect: "manual" })).status).toBe(401);

    const again = await fetch(`${server.url}/api/v2/assets/from-hash`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        hash: (await (await fetch(`${server.url}/api/v2/assets/${asset.id}`, { headers: { authorization: `Bearer ${KEY}` } })).json()).hash,
        file_path: "other.txt",
      }),
    });
    const reused = (await again.json()) as { created_new: boolean };
    expect(again.status).toBe(201);
    expect(reused.created_new).toBe(false);
  });
});

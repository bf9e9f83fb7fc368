// Integers beyond 2^53 in a graph arrive exactly as the client wrote them: validated against
// bounds exactly, run by the embedded engine, stored and returned digit for digit.
import { afterEach, describe, expect, it } from "vitest";
import { bigIntOf, cloneJson, isBigInteger, parseJson } from "../../src/domain/exact-json.ts";
import { startTestServer, type TestServer } from "./helpers.ts";
import { exactSeedGraph } from "../fixtures/graphs.ts";

const MAX_SEED = "18446744073709551615"; // 2^64 - 1, ComfyUI's largest seed

/** A sampler graph as JSON text, the seed written as given (JSON.stringify could not write it). */
const samplerGraph = exactSeedGraph;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe("exact JSON", () => {
  it("keeps integers beyond 2^53 exact and everything else as JSON.parse gives it", () => {
    const v = parseJson(`{"a":9007199254740993,"b":-18446744073709551615,"c":1.5,"d":9007199254740991,"e":"12345678901234567890","f":1e300}`) as Record<
      string,
      unknown
    >;
    expect(JSON.stringify(v)).toBe(`{"a":9007199254740993,"b":-18446744073709551615,"c":1.5,"d":9007199254740991,"e":"12345678901234567890","f":1e+300}`);
    expect(isBigInteger(v.a)).toBe(true);
    expect(v.d).toBe(9007199254740991); // safe: a plain number
    expect(bigIntOf(v.b)).toBe(-18446744073709551615n);
    expect(JSON.stringify(cloneJson(v))).toBe(JSON.stringify(v));
    expect(parseJson(`{"x":[1,2,{"y":3}]}`)).toEqual({ x: [1, 2, { y: 3 }] });
  });
});

describe("integers beyond 2^53 in a graph", () => {
  it("v2: seed 2^64 - 1 runs, is stored and returned exactly; 2^64 is out of range, exactly", async () => {
    server = await startTestServer();
    const res = await server.api.request("POST", "/api/v2/jobs", {
      body: `{"workflow":${samplerGraph(MAX_SEED)}}`,
      headers: { "content-type": "application/json" },
    });
    expect(res.status, res.text).toBe(201);
    const job = await server.api.waitTerminal(res.body.id);
    expect(job.status).toBe("succeeded");
    const wf = await server.api.get(`/api/v2/jobs/${res.body.id}/workflow`);
    expect(wf.text).toContain(`"seed":${MAX_SEED}`);

    const over = await server.api.request("POST", "/api/v2/jobs", {
      body: `{"workflow":${samplerGraph("18446744073709551616")}}`,
      headers: { "content-type": "application/json" },
    });
    expect(over.status).toBe(422);
    expect(over.body.error.details.node_errors["1"]).toEqual([expect.objectContaining({ field: "seed", reason: "out_of_range" })]);
  });

  it("two seeds a double cannot tell apart are two different pictures", async () => {
    server = await startTestServer();
    const hashes: string[] = [];
    for (const seed of ["9007199254740992", "9007199254740993"]) {
      const res = await server.api.request("POST", "/api/v2/jobs", {
        body: `{"workflow":${samplerGraph(seed)}}`,
        headers: { "content-type": "application/json" },
      });
      expect(res.status, res.text).toBe(201);
      const job = await server.api.waitTerminal(res.body.id);
      expect(job.status).toBe("succeeded");
      hashes.push(job.outputs[0].hash);
    }
    expect(hashes[0]).toMatch(/^blake3:/);
    expect(hashes[0]).not.toBe(hashes[1]);
  });

  it("object_info gives the seed's bound exactly; the hosted /prompt and /history keep the seed exact", async () => {
    server = await startTestServer();
    const info = await server.api.get("/api/object_info/FlowgateSampler");
    expect(info.text).toContain(`"max":${MAX_SEED}`);
    const res = await server.api.request("POST", "/api/prompt", {
      body: `{"prompt":${samplerGraph("9007199254740993")}}`,
      headers: { "content-type": "application/json" },
    });
    expect(res.status, res.text).toBe(200);
    const id = res.body.prompt_id;
    await server.api.waitTerminal(id);
    const history = await server.api.get(`/api/history/${id}`);
    expect(history.text).toContain(`"seed":9007199254740993`);
  });
});

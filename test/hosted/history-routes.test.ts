// ComfyUI's POST /history (and /api/history): delete or clear finished entries of the caller,
// live prompts left alone; and an unknown route is 404 whatever the body's Content-Type.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, until, type TestServer } from "./hosted-server.ts";

const KEY = "test-key-0123456789";
let server: TestServer;
const auth = { "x-api-key": KEY };

beforeAll(async () => {
  server = await startTestServer(["--token", KEY, "--concurrency", "1"]);
});
afterAll(async () => {
  await server.stop();
});

let n = 0;
async function queue(prompt: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${server.url}/api/prompt`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ prompt }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { prompt_id: string }).prompt_id;
}
const quick = () =>
  queue({ "1": { class_type: "PrimitiveString", inputs: { value: `h${n++}` } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } });
const slow = (seconds: number) =>
  queue({
    "1": { class_type: "PrimitiveString", inputs: { value: `s${n++}` } },
    "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
    "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
  });

async function history(): Promise<Record<string, unknown>> {
  return (await (await fetch(`${server.url}/api/history`, { headers: auth })).json()) as Record<string, unknown>;
}
async function entry(id: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${server.url}/history/${id}`, { headers: auth })).json()) as Record<string, unknown>;
}
const finished = (id: string) => until(async () => (id in (await entry(id)) ? true : undefined));
const post = (path: string, body: string, type = "application/json") =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { ...auth, "content-type": type }, body });

describe("POST /history", () => {
  it("deletes the named finished entries and leaves live prompts, unknown ids and the jobs themselves alone", async () => {
    const a = await quick();
    const b = await quick();
    await finished(a);
    await finished(b);
    const running = await slow(3);
    const res = await post("/history", JSON.stringify({ delete: [a, running, "no-such-prompt"] }));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    expect(await entry(a)).toEqual({});
    expect(Object.keys(await history())).toContain(b);
    expect(Object.keys(await history())).not.toContain(a);
    // The job stays readable outside history until it expires.
    const status = await fetch(`${server.url}/api/job/${a}/status`, { headers: auth });
    expect(status.status).toBe(200);
    // A prompt still running when the delete came was not in history: it enters it when it ends.
    await finished(running);
    expect(Object.keys(await history())).toContain(running);
  });

  it("clears every finished entry through /api/history, and reads a text/plain body as JSON as ComfyUI does", async () => {
    const c = await quick();
    await finished(c);
    const res = await post("/api/history", JSON.stringify({ clear: true }), "text/plain;charset=UTF-8");
    expect(res.status).toBe(200);
    expect(await history()).toEqual({});
    const d = await quick();
    await finished(d);
    expect(Object.keys(await history())).toEqual([d]);
  });

  it("refuses a body that is not the history request", async () => {
    expect((await post("/history", "{not json")).status).toBe(400);
    expect((await post("/history", JSON.stringify({ delete: "x" }))).status).toBe(400);
  });
});

describe("an unknown route", () => {
  it.each([
    ["text/plain", "hello"],
    ["application/json", "{broken"],
    ["application/x-www-form-urlencoded", "a=1"],
    ["application/octet-stream", "\u0000\u0001"],
  ])("is 404 with a %s body", async (type, body) => {
    for (const path of ["/api/no-such-route", "/api/v2/no-such-route", "/no-such-route"]) {
      const res = await post(path, body, type);
      expect(res.status, `${path} ${type}`).toBe(404);
      await res.text();
    }
  });
});

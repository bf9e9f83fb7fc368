// In front of ComfyUI, integers beyond 2^53 reach it exactly as the client wrote them, are
// validated against its bounds exactly, and its object_info bounds are served exactly.
import { afterEach, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { call, startFront, TERMINAL, until, type Front } from "./helpers.ts";
import { exactSeedGraph } from "../fixtures/graphs.ts";

const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;
const MAX_SEED = "18446744073709551615";

const samplerGraph = exactSeedGraph;

let fake: FakeComfyUI | undefined;
let front: Front | undefined;
afterEach(async () => {
  await front?.stop();
  await fake?.stop();
  front = fake = undefined;
});

async function post(path: string, body: string) {
  const res = await fetch(`${front!.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, text: await res.text() };
}

describe("integers beyond 2^53 in front of ComfyUI", () => {
  it("reach ComfyUI exactly from v2 and the hosted /prompt; ComfyUI's 2^64 - 1 bound is served and applied exactly", async () => {
    fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
    front = await startFront([fake.url]);

    const info = await fetch(`${front.url}/api/object_info/FlowgateSampler`).then((r) => r.text());
    expect(info).toContain(`"max":${MAX_SEED}`);

    const v2 = await post("/api/v2/jobs", `{"workflow":${samplerGraph("9007199254740993")}}`);
    expect(v2.status, v2.text).toBe(201);
    const id = JSON.parse(v2.text).id;
    const sent = await until(() => fake!.calls("POST", "/prompt").find((r) => r.json.prompt_id === id), "the prompt at ComfyUI");
    expect(sent.body.toString()).toContain(`"seed":9007199254740993`);
    await until(async () => (TERMINAL.includes((await call("GET", `${front!.url}/api/v2/jobs/${id}`)).body.status) ? true : undefined), "the job to end");

    const hosted = await post("/api/prompt", `{"prompt":${samplerGraph(MAX_SEED)}}`);
    expect(hosted.status, hosted.text).toBe(200);
    const pid = JSON.parse(hosted.text).prompt_id;
    const sentHosted = await until(() => fake!.calls("POST", "/prompt").find((r) => r.json.prompt_id === pid), "the hosted prompt at ComfyUI");
    expect(sentHosted.body.toString()).toContain(`"seed":${MAX_SEED}`);

    const over = await post("/api/v2/jobs", `{"workflow":${samplerGraph("18446744073709551616")}}`);
    expect(over.status).toBe(422);
    expect(JSON.parse(over.text).error.details.node_errors["1"]).toEqual([expect.objectContaining({ field: "seed", reason: "out_of_range" })]);
  });
});

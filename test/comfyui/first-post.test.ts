// A job whose id this process made as it accepted it has never been handed to ComfyUI by anyone:
// its prompt is posted without first asking where ComfyUI holds it (GET /queue, GET
// /history/{id}). A prompt id the client chose may have been posted before, so it is asked for.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { call, startFront, TERMINAL, until, type Front } from "./helpers.ts";

const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;

const graph = (text: string) => ({
  "1": { class_type: "PrimitiveString", inputs: { value: text } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
});

describe("the first post of a job's prompt", () => {
  let fake: FakeComfyUI;
  let front: Front;

  beforeAll(async () => {
    fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO, worker: true }).start();
    front = await startFront([fake.url]);
  });
  afterAll(async () => {
    await front?.stop();
    await fake?.stop();
  });

  /** The requests the front made before it posted the prompt `id`. */
  function askedBeforePost(id: string): string[] {
    const posted = fake.requests.findIndex((r) => r.method === "POST" && r.path === "/prompt" && r.json?.prompt_id === id);
    expect(posted).toBeGreaterThanOrEqual(0);
    return fake.requests.slice(0, posted).map((r) => `${r.method} ${r.path}`);
  }

  async function ended(id: string): Promise<void> {
    await until(async () => {
      const res = await call("GET", `${front.url}/api/v2/jobs/${id}`);
      return TERMINAL.includes(res.body.status) ? res.body : undefined;
    }, `job ${id} ends`);
  }

  it("posts a job the server named without asking ComfyUI about it first", async () => {
    const res = await call("POST", `${front.url}/api/v2/jobs`, { workflow: graph("fresh") });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    await ended(id);
    expect(askedBeforePost(id)).not.toContain(`GET /history/${id}`);
    expect(fake.calls("POST", "/prompt").filter((r) => r.json?.prompt_id === id)).toHaveLength(1);
  });

  it("asks where ComfyUI holds a prompt id the client chose before posting it", async () => {
    const id = crypto.randomUUID();
    const res = await call("POST", `${front.url}/api/prompt`, { prompt: graph("chosen"), prompt_id: id });
    expect(res.status).toBe(200);
    await ended(id);
    expect(askedBeforePost(id)).toContain(`GET /history/${id}`);
  });
});

// In front of ComfyUI, a running node's `activity` in ComfyUI's progress_state (what it spends its
// time on, e.g. loading) reaches the hosted socket's progress_state, and leaves it once ComfyUI
// stops saying it.
import { afterEach, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { ComfyClient } from "../hosted/comfy-client.ts";
import { FakeComfyUI } from "./fake-comfyui.ts";
import { startFront, type Front, textGraph } from "./helpers.ts";

const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;

let fake: FakeComfyUI | undefined;
let front: Front | undefined;
let client: ComfyClient | undefined;
afterEach(async () => {
  client?.close();
  await front?.stop();
  await fake?.stop();
  client = front = fake = undefined;
});

describe("progress_state's activity", () => {
  it("is passed on from ComfyUI for the running node", async () => {
    fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO }).start();
    front = await startFront([fake.url]);
    client = new ComfyClient(front.url);
    await client.connect();
    const res = await client.queuePrompt(textGraph("x"));
    const { prompt_id: id } = (await res.json()) as { prompt_id: string };
    await fake.nextPrompt();
    fake.startRunning(id);
    const state = (node: string, activity?: string) => ({
      prompt_id: id,
      nodes: {
        [node]: {
          value: 0,
          max: 1,
          state: "running",
          node_id: node,
          prompt_id: id,
          display_node_id: node,
          parent_node_id: null,
          real_node_id: node,
          ...(activity ? { activity } : {}),
        },
      },
    });
    fake.send("execution_start", { prompt_id: id });
    fake.send("progress_state", state("1", "loading"));
    fake.send("executing", { node: "1", prompt_id: id });
    fake.send("progress_state", state("1"));
    fake.send("executing", { node: "2", prompt_id: id });
    fake.send("executed", { node: "2", display_node: "2", output: { text: ["x"] }, prompt_id: id });
    fake.send("execution_success", { prompt_id: id });
    fake.finish(id, { outputs: { "2": { text: ["x"] } }, status: { status_str: "success", completed: true, messages: [] }, meta: {} });

    const mine = await client.waitForEnd(id);
    const states = mine.filter((m) => m.type === "progress_state");
    for (const s of states) expect(v.event_ws_progress_state(s), JSON.stringify(v.event_ws_progress_state.errors)).toBe(true);
    const activities = states.map((s) => (s.data.nodes as Record<string, { activity?: string }>)["1"]?.activity ?? null);
    // Said while node 1 loads, then no longer once ComfyUI stopped saying it.
    expect(activities).toContain("loading");
    expect(activities[activities.length - 1]).toBeNull();
    expect(activities.indexOf("loading")).toBeLessThan(activities.lastIndexOf(null));
  });
});

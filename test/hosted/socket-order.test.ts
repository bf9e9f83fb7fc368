// The socket's messages in ComfyUI 0.3.64's order and shapes, as recorded from a real ComfyUI
// 0.3.64: progress_state at every node change (before the node's `executing` and before
// `progress`), a `status` as the run is taken and another before its closing `executing` (no
// node), the nodes that executed in execution_error, and the server's feature_flags answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { ComfyClient, type ComfyMessage } from "./comfy-client.ts";
import { startTestServer, type TestServer } from "./hosted-server.ts";

let server: TestServer;
let client: ComfyClient;

beforeAll(async () => {
  server = await startTestServer(["--concurrency", "1"]);
  client = new ComfyClient(server.url);
  await client.connect(true);
});
afterAll(async () => {
  client.close();
  await server.stop();
});

/** Every message of a run, `status` included, from its execution_start to its closing `executing`; `before`: the message just before execution_start. */
async function run(prompt: Record<string, unknown>): Promise<{ id: string; messages: ComfyMessage[]; before: ComfyMessage | undefined }> {
  const res = await client.queuePrompt(prompt);
  expect(res.status).toBe(200);
  const { prompt_id: id } = (await res.json()) as { prompt_id: string };
  await client.waitForEnd(id);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const start = client.messages.findIndex((m) => m.type === "execution_start" && m.data.prompt_id === id);
    const end = client.messages.findIndex((m) => m.type === "executing" && m.data.node === null && m.data.prompt_id === id);
    if (start >= 0 && end >= 0) {
      const messages = client.messages.slice(start, end + 1);
      for (const m of messages) {
        const validate = (v as Record<string, any>)[`event_ws_${m.type}`];
        expect(validate(m), `${m.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
      return { id, messages, before: client.messages[start - 1] };
    }
    if (Date.now() > deadline) throw new Error(`no closing executing for ${id}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const typesOf = (messages: ComfyMessage[]) => messages.map((m) => (m.type === "executing" ? `executing:${m.data.node}` : m.type));

describe("the hosted socket, as ComfyUI 0.3.64 speaks it", () => {
  it("progress_state follows every node change and precedes `progress`; status comes before the closing executing", async () => {
    const { id, messages, before } = await run({
      "1": { class_type: "FlowgateSampler", inputs: { seed: 3, steps: 2, width: 16, height: 16 } },
      "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
    });
    const types = typesOf(messages);
    expect(types.slice(-3)).toEqual(["execution_success", "status", "executing:null"]);
    // ComfyUI's PromptQueue.get tells the queue as the prompt is taken, before execution_start.
    expect(before?.type).toBe("status");
    // Each node start comes after progress_state with that node running (start_progress, then executing).
    for (const [i, m] of messages.entries()) {
      if (m.type === "executing" && m.data.node !== null) {
        expect(messages[i - 1]!.type).toBe("progress_state");
        expect((messages[i - 1]!.data as any).nodes[m.data.node as string].state).toBe("running");
      }
      if (m.type === "progress") expect(messages[i - 1]!.type).toBe("progress_state");
    }
    const states = messages.filter((m) => m.type === "progress_state");
    const last = states[states.length - 1]! as any;
    expect(last.data.prompt_id).toBe(id);
    expect(Object.keys(last.data.nodes).sort()).toEqual(["1", "2"]);
    for (const node of Object.values(last.data.nodes) as any[]) {
      expect(node).toMatchObject({ state: "finished", prompt_id: id, parent_node_id: null });
      expect(node.value).toBe(node.max);
    }
    expect(last.data.nodes["1"]).toMatchObject({ node_id: "1", display_node_id: "1", real_node_id: "1", max: 2 });
  });

  it("answers the client's feature_flags with the server's, the largest upload among them", async () => {
    while (!client.messages.some((m) => m.type === "feature_flags")) await new Promise((r) => setTimeout(r, 10));
    const answer = client.messages.find((m) => m.type === "feature_flags") as any;
    expect(answer.data).toEqual({ supports_preview_metadata: true, max_upload_size: 512 * 1024 * 1024 });
    expect((v as Record<string, any>).event_ws_feature_flags(answer)).toBe(true);
  });

  it("execution_error names the nodes that executed before the failure, then status, then the closing executing", async () => {
    const { messages } = await run({
      "1": { class_type: "PrimitiveString", inputs: { value: "x" } },
      "2": { class_type: "FlowgatePartnerCall", inputs: { prompt: ["1", 0] } },
      "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
    });
    const types = typesOf(messages);
    expect(types.slice(-3)).toEqual(["execution_error", "status", "executing:null"]);
    const error = messages.find((m) => m.type === "execution_error")!;
    expect(error.data).toMatchObject({ node_id: "2", node_type: "FlowgatePartnerCall", executed: ["1"] });
  });

  it("/history lists the most recent max_items entries oldest first, each with ComfyUI's meta of its output nodes", async () => {
    const ids: string[] = [];
    for (const value of ["a", "b", "c"]) {
      ids.push((await run({ "1": { class_type: "PrimitiveString", inputs: { value } }, "7": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } })).id);
    }
    const res = await fetch(`${server.url}/api/history?max_items=2`);
    const history = (await res.json()) as Record<string, any>;
    expect(Object.keys(history)).toEqual(ids.slice(1));
    expect(history[ids[2]!].meta).toEqual({ "7": { node_id: "7", display_node: "7", parent_node: null, real_node_id: "7" } });
  });

  it("keeps nothing of a run whose sockets closed before it ended", async () => {
    const other = new ComfyClient(server.url);
    await other.connect();
    const res = await other.queuePrompt({
      "1": { class_type: "PrimitiveString", inputs: { value: "x" } },
      "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds: 1 } },
      "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
    });
    const { prompt_id: id } = (await res.json()) as { prompt_id: string };
    const deadline = Date.now() + 10_000;
    while (!other.messages.some((m) => m.type === "executing" && m.data.node === "2" && m.data.prompt_id === id)) {
      if (Date.now() > deadline) throw new Error("node 2 never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    other.close();
    client.close(); // the owner has no socket left
    const sockets = server.app.hostedSockets!;
    while (sockets.size > 0 || ((await (await fetch(`${server.url}/api/job/${id}/status`)).json()) as { status: string }).status !== "success") {
      if (Date.now() > deadline + 10_000) throw new Error("the run did not end");
      await new Promise((r) => setTimeout(r, 50));
    }
    // The end's event follows its commit: wait for it (without the cleanup the count never drops).
    while (sockets.trackedRuns > 0) {
      if (Date.now() > deadline + 15_000) throw new Error(`${sockets.trackedRuns} run(s) still kept after the end`);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(sockets.trackedRuns).toBe(0);
    client = new ComfyClient(server.url);
    await client.connect(true);
  });
});

// In front of ComfyUI, the hosted socket and history pass ComfyUI's execution_error on as it
// sent it (traceback frames, inputs, outputs, executed nodes; the exception type within the
// contract's six), paths and the
// partner key removed; the v2 job error stays the contract's.
import { afterEach, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { ComfyClient } from "../hosted/comfy-client.ts";
import { BinaryFrameType } from "../../generated/asyncapi-types.ts";
import { decodeFrame } from "../../src/wire/binary-frames.ts";
import { FakeComfyUI, textFrame } from "./fake-comfyui.ts";
import { call, startFront, waitJob, type Front, textGraph } from "./helpers.ts";

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

describe("ComfyUI's execution_error on the hosted interface", () => {
  it("keeps ComfyUI's fields on the socket and in history; v2 shows the contract's JobError", async () => {
    fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO }).start();
    front = await startFront([fake.url]);
    client = new ComfyClient(front.url);
    await client.connect();
    const key = "partner-secret-xyz";
    const res = await client.queuePrompt(
      { "1": { class_type: "PrimitiveString", inputs: { value: "x" } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } },
      { api_key_vendor_org: key },
    );
    expect(res.status).toBe(200);
    const { prompt_id: id } = (await res.json()) as { prompt_id: string };
    await fake.nextPrompt();
    fake.startRunning(id);
    const error = {
      prompt_id: id,
      node_id: "2",
      node_type: "PreviewAny",
      executed: ["1"],
      exception_message: "mat1 and mat2 shapes cannot be multiplied\n",
      exception_type: "RuntimeError",
      traceback: ['  File "/home/user/ComfyUI/execution.py", line 496, in execute\n', `    output_data = get_output_data(key="${key}")\n`],
      current_inputs: { source: ["x"], api_key_comfy_org: [key] },
      current_outputs: ["1"],
      timestamp: 1,
    };
    fake.send("execution_start", { prompt_id: id });
    fake.send("executing", { node: "1", prompt_id: id });
    fake.send("executing", { node: "2", prompt_id: id });
    fake.send("execution_error", error);
    fake.finish(id, { outputs: {}, status: { status_str: "error", completed: false, messages: [["execution_error", error]] }, meta: {} });

    const mine = await client.waitForEnd(id);
    const sent = mine.find((m) => m.type === "execution_error")!;
    expect(v.event_ws_execution_error(sent), JSON.stringify(v.event_ws_execution_error.errors)).toBe(true);
    expect(sent.data).toMatchObject({
      prompt_id: id,
      node_id: "2",
      node_type: "PreviewAny",
      executed: ["1"],
      // The contract bounds exception_type to six values (the seed's HostedExceptionType): a node's failure is ValidationError.
      exception_type: "ValidationError",
      current_inputs: { source: ["x"], api_key_comfy_org: ["[redacted]"] },
      current_outputs: ["1"],
    });
    expect(sent.data.traceback).toEqual(['  File "execution.py", line 496, in execute\n', `    output_data = get_output_data(key="[redacted]")\n`]);
    expect(JSON.stringify(sent)).not.toContain(key);

    const history = await client.history(id);
    const [, inHistory] = (history[id].status.messages as [string, any][]).find(([type]) => type === "execution_error")!;
    expect(inHistory).toMatchObject({ exception_type: "ValidationError", executed: ["1"], current_outputs: ["1"] });

    const job = await waitJob(front.url, id, (j) => j.status === "failed", "the job to fail");
    expect(Object.keys(job.error).sort()).toEqual(["class_type", "code", "message", "node_id", "traceback"]);
    expect((await call("GET", `${front.url}/api/v2/jobs/${id}`)).body.error.comfy).toBeUndefined();
  });

  it("passes TEXT frames on in order with the node ComfyUI named (the running one where it named none)", async () => {
    fake = await new FakeComfyUI({ objectInfo: OBJECT_INFO }).start();
    front = await startFront([fake.url]);
    client = new ComfyClient(front.url);
    await client.connect();
    const res = await client.queuePrompt(textGraph("x"));
    const { prompt_id: id } = (await res.json()) as { prompt_id: string };
    await fake.nextPrompt();
    fake.startRunning(id);
    fake.send("execution_start", { prompt_id: id });
    fake.send("executing", { node: "1", prompt_id: id });
    // Sent right behind `executing 2`: the front must not label it with node 1, still current then.
    fake.send("executing", { node: "2", prompt_id: id });
    fake.sendBinary(textFrame("2", "two says hi"));
    fake.sendBinary(textFrame("1", "one, named while two runs"));
    fake.sendBinary(textFrame("", "nobody named"));
    fake.send("executing", { node: null, prompt_id: id });
    fake.finish(id, { outputs: {}, status: { status_str: "success", completed: true, messages: [] }, meta: {} });
    await client.waitForEnd(id);
    await waitJob(front.url, id, (j) => j.status === "succeeded", "the job to succeed");

    const texts = client.binary.map((f) => decodeFrame(f)).filter((f) => f.type === BinaryFrameType.TEXT);
    expect(texts).toEqual([
      { type: BinaryFrameType.TEXT, nodeId: "2", text: "two says hi" },
      { type: BinaryFrameType.TEXT, nodeId: "1", text: "one, named while two runs" },
      { type: BinaryFrameType.TEXT, nodeId: "2", text: "nobody named" },
    ]);
  });
});

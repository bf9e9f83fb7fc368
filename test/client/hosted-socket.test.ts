// HostedSocket.follow against a scripted WebSocket server: it ends at the prompt's outcome
// whichever order the end marker (`executing` with no node) and the outcome come in, skips other
// prompts, and decodes the three binary frame types.
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { previewImageFrame, previewWithMetadataFrame, textFrame } from "../../src/wire/binary-frames.ts";
import { HostedSocket, type HostedSocketEvent } from "../../src/index.ts";

let wss: WebSocketServer | null = null;
afterEach(async () => {
  await new Promise<void>((resolve) => (wss ? wss.close(() => resolve()) : resolve()));
  wss = null;
});

/** A server that answers the client's first message (the handshake) with `frames`. */
async function scripted(frames: Array<object | Buffer>): Promise<{ url: string; handshake: Promise<unknown> }> {
  wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise<void>((resolve) => wss!.once("listening", () => resolve()));
  const handshake = new Promise<unknown>((resolve) => {
    wss!.on("connection", (ws) => {
      ws.once("message", (data) => {
        resolve(JSON.parse(String(data)));
        for (const f of frames) ws.send(Buffer.isBuffer(f) ? f : JSON.stringify(f));
      });
    });
  });
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/ws`, handshake };
}

async function follow(url: string, promptId: string, graceMs?: number): Promise<HostedSocketEvent[]> {
  const socket = await HostedSocket.open(url);
  const out: HostedSocketEvent[] = [];
  try {
    for await (const e of socket.follow(promptId, { graceMs })) out.push(e);
  } finally {
    socket.close();
  }
  return out;
}

const types = (events: HostedSocketEvent[]) => events.map((e) => (e.kind === "message" ? e.message.type : e.kind));

describe("HostedSocket.follow", () => {
  it("sends feature_flags first, skips other prompts, and ends at execution_success sent after the end marker (ComfyUI's order)", async () => {
    const meta = { node_id: "1", display_node_id: "1", real_node_id: "1", prompt_id: "p1", parent_node_id: null };
    const { url, handshake } = await scripted([
      { type: "execution_start", data: { prompt_id: "other" } },
      { type: "execution_start", data: { prompt_id: "p1" } },
      previewWithMetadataFrame({ ...meta, prompt_id: "other" }, Buffer.from([0xff, 0xd8, 0xff, 1])),
      previewWithMetadataFrame(meta, Buffer.from([0x89, 0x50, 0x4e, 0x47])),
      previewImageFrame("image/jpeg", Buffer.from([0xff, 0xd8, 0xff, 2])),
      textFrame("1", "step 1"),
      { type: "executing", data: { node: null, prompt_id: "p1" } },
      { type: "execution_success", data: { prompt_id: "p1" } },
      { type: "status", data: { status: { exec_info: { queue_remaining: 0 } } } },
    ]);
    const events = await follow(url, "p1", 10_000);
    expect(await handshake).toEqual({ type: "feature_flags", data: { supports_preview_metadata: true } });
    expect(types(events)).toEqual(["execution_start", "preview", "preview", "text", "executing", "execution_success"]);
    const [withMeta, bare] = events.filter((e) => e.kind === "preview") as Array<Extract<HostedSocketEvent, { kind: "preview" }>>;
    expect(withMeta!.metadata?.prompt_id).toBe("p1");
    expect(withMeta!.contentType).toBe("image/png");
    expect(bare!.metadata).toBeNull();
    expect(bare!.contentType).toBe("image/jpeg");
  });

  it("ends at the outcome when it comes before the end marker", async () => {
    const { url } = await scripted([
      { type: "execution_error", data: { prompt_id: "p2", exception_type: "ValidationError", exception_message: "x" } },
      { type: "executing", data: { node: null, prompt_id: "p2" } },
    ]);
    expect(types(await follow(url, "p2"))).toEqual(["execution_error"]);
  });

  it("ends a moment after a bare end marker when no outcome follows (older servers)", async () => {
    const { url } = await scripted([{ type: "executing", data: { node: null, prompt_id: "p3" } }]);
    expect(types(await follow(url, "p3", 50))).toEqual(["executing"]);
  });
});

// ComfyUI's WebSocket messages as this backend reads them: the prompt a message belongs to,
// whether it ends a run, and the binary frames (all integers big-endian).
import { BinaryFrameType, PreviewImageType } from "../../../generated/asyncapi-types.ts";

/** A JSON frame: {type, data}. */
export interface ComfyMessage {
  type: string;
  data: Record<string, unknown>;
}

/** How a run ended, as a message or a history entry tells it. */
export type Outcome =
  | { kind: "success" }
  | { kind: "error"; data: Record<string, unknown> }
  | { kind: "interrupted" }
  /** `executing` with no node (older ComfyUI's only end signal): the history says how. */
  | { kind: "ended" };

/** The prompt id of a message, if it names one. */
export function promptIdOf(m: ComfyMessage): string | null {
  const id = m.data.prompt_id;
  return typeof id === "string" && id !== "" ? id : null;
}

/** The end a message announces, or null when it does not end a run. */
export function outcomeOf(m: ComfyMessage): Outcome | null {
  switch (m.type) {
    case "execution_success":
      return { kind: "success" };
    case "execution_error":
      return { kind: "error", data: m.data };
    case "execution_interrupted":
      return { kind: "interrupted" };
    case "executing":
      return m.data.node === null || m.data.node === undefined ? { kind: "ended" } : null;
    default:
      return null;
  }
}

/** A decoded binary frame; null for frames this backend does not use. */
export type BinaryFrame =
  | { kind: "preview"; contentType: string; image: Buffer; promptId: string | null; nodeId: string | null }
  | { kind: "text"; nodeId: string; text: string };

/** Decodes PREVIEW_IMAGE (1), TEXT (3) and PREVIEW_IMAGE_WITH_METADATA (4). */
export function decodeBinary(frame: Buffer): BinaryFrame | null {
  if (frame.length < 8) return null;
  const type = frame.readUInt32BE(0);
  if (type === BinaryFrameType.PREVIEW_IMAGE) {
    const contentType = frame.readUInt32BE(4) === PreviewImageType.PNG ? "image/png" : "image/jpeg";
    return { kind: "preview", contentType, image: frame.subarray(8), promptId: null, nodeId: null };
  }
  const len = frame.readUInt32BE(4);
  if (8 + len > frame.length) return null;
  if (type === BinaryFrameType.TEXT) return { kind: "text", nodeId: frame.toString("utf8", 8, 8 + len), text: frame.toString("utf8", 8 + len) };
  if (type === BinaryFrameType.PREVIEW_IMAGE_WITH_METADATA) {
    let meta: Record<string, unknown>;
    try {
      meta = JSON.parse(frame.toString("utf8", 8, 8 + len)) as Record<string, unknown>;
    } catch {
      return null;
    }
    const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
    const image = frame.subarray(8 + len);
    const declared = str(meta.image_type);
    const contentType = declared?.startsWith("image/") ? declared : image[0] === 0x89 ? "image/png" : "image/jpeg";
    return { kind: "preview", contentType, image, promptId: str(meta.prompt_id), nodeId: str(meta.display_node_id) ?? str(meta.node_id) };
  }
  return null;
}

/** What a history entry says about the end of its prompt. */
/** Ends of a prompt in ComfyUI's history messages. */
const END_MESSAGES = new Set(["execution_success", "execution_error", "execution_interrupted"]);

/** When ComfyUI recorded a prompt's start and end (the `timestamp`, ms, of its history messages), where it did. */
export function timesOfHistory(entry: { status?: { messages?: unknown[] } }): { startedAt?: number; endedAt?: number } {
  const times: { startedAt?: number; endedAt?: number } = {};
  for (const item of entry.status?.messages ?? []) {
    if (!Array.isArray(item)) continue;
    const [type, data] = item as [unknown, unknown];
    const at = typeof data === "object" && data !== null ? (data as Record<string, unknown>).timestamp : undefined;
    if (typeof at !== "number" || !Number.isFinite(at)) continue;
    if (type === "execution_start") times.startedAt = at;
    else if (typeof type === "string" && END_MESSAGES.has(type)) times.endedAt = at;
  }
  return times;
}

export function outcomeOfHistory(entry: { status?: { status_str?: string; completed?: boolean; messages?: unknown[] } }): Outcome {
  const status = entry.status;
  // History without a status (old ComfyUI) is only written for prompts that ran.
  if (!status || status.status_str === "success" || status.completed === true) return { kind: "success" };
  for (const item of status.messages ?? []) {
    if (!Array.isArray(item)) continue;
    const [type, data] = item as [unknown, unknown];
    const d = typeof data === "object" && data !== null ? (data as Record<string, unknown>) : {};
    if (type === "execution_interrupted") return { kind: "interrupted" };
    if (type === "execution_error") return { kind: "error", data: d };
  }
  return { kind: "error", data: {} };
}

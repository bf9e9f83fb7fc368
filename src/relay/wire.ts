// The relay's wire format on PostgreSQL notifications. A batch of run events is one JSON array,
// cut at UTF-8 character boundaries into parts that each fit a notification (PostgreSQL refuses
// payloads of 8,000 bytes or more); the parts of a batch are sent in one statement, so they
// arrive together, and the listener joins them by their numbers.
import type { RunEvent } from "./event-relay.ts";

/** Bytes of one part's slice; the header keeps the payload under PostgreSQL's 8,000. */
export const PART_BYTES = 7_600;

/** A preview on the wire: its bytes as base64. */
type WireEvent = Exclude<RunEvent, { type: "preview" }> | (Omit<Extract<RunEvent, { type: "preview" }>, "data"> & { data_base64: string });

/** Encodes a batch into notification payloads: `<sender> <batch> <i>/<n>\n<slice>`. */
export function encodeBatch(sender: string, batch: number, events: readonly RunEvent[]): string[] {
  const wire: WireEvent[] = events.map((e) =>
    e.type === "preview"
      ? { type: e.type, job_id: e.job_id, owner: e.owner, node_id: e.node_id, content_type: e.content_type, data_base64: e.data.toString("base64") }
      : e,
  );
  const bytes = Buffer.from(JSON.stringify(wire), "utf8");
  const slices: string[] = [];
  for (let at = 0; at < bytes.length; ) {
    let end = Math.min(at + PART_BYTES, bytes.length);
    while (end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--; // never inside a character
    slices.push(bytes.toString("utf8", at, end));
    at = end;
  }
  return slices.map((slice, i) => `${sender} ${batch} ${i}/${slices.length}\n${slice}`);
}

/** Joins the parts of batches back into events. Parts of other senders' batches may interleave. */
export class BatchJoiner {
  private readonly partial = new Map<string, { parts: string[]; left: number }>();

  /** Takes one payload; returns the batch's events once its last part is in, else null. Malformed payloads are dropped. */
  take(payload: string): { sender: string; events: RunEvent[] } | null {
    const newline = payload.indexOf("\n");
    const header = /^(\S+) (\d+) (\d+)\/(\d+)$/.exec(newline < 0 ? "" : payload.slice(0, newline));
    if (!header) return null;
    const [, sender, batch, index, count] = header as unknown as [string, string, string, string, string];
    const i = Number(index);
    const n = Number(count);
    if (i >= n) return null;
    const key = `${sender} ${batch}`;
    let entry = this.partial.get(key);
    if (!entry) {
      // A batch whose parts never all came (a sender that died mid-send) is forgotten after a while.
      if (this.partial.size > 1000) this.partial.delete(this.partial.keys().next().value!);
      this.partial.set(key, (entry = { parts: new Array<string>(n), left: n }));
    }
    if (entry.parts[i] === undefined) {
      entry.parts[i] = payload.slice(newline + 1);
      entry.left--;
    }
    if (entry.left > 0) return null;
    this.partial.delete(key);
    try {
      const wire = JSON.parse(entry.parts.join("")) as WireEvent[];
      if (!Array.isArray(wire)) return null;
      return {
        sender,
        events: wire.map((e) =>
          "data_base64" in e
            ? {
                type: "preview",
                job_id: e.job_id,
                owner: e.owner,
                node_id: e.node_id,
                content_type: e.content_type,
                data: Buffer.from(e.data_base64, "base64"),
              }
            : e,
        ),
      };
    } catch {
      return null;
    }
  }
}

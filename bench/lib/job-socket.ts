// The hosted WebSocket (/ws) of a flowgate node as the bench's eyes on job starts and ends: it
// follows every job of its owner, so it is open before a job exists (a job's own event stream can
// only be opened once the POST answered, and a fast start may precede that).
import WebSocket from "ws";
import { hrNs } from "./stats.ts";

type Kind = "execution_start" | "execution_success";

/** When (process.hrtime ns) each job's start and success arrived on the socket. */
export class JobSocket {
  readonly #ws: WebSocket;
  readonly #seen: Record<Kind, Map<string, bigint>> = { execution_start: new Map(), execution_success: new Map() };
  readonly #waiting: Record<Kind, Map<string, (t: bigint) => void>> = { execution_start: new Map(), execution_success: new Map() };
  /** Successes in arrival order (ns), for completion rates. */
  readonly successes: bigint[] = [];
  /** execution_error messages (a trivial job must not fail). */
  errors = 0;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      const t = hrNs();
      const msg = JSON.parse(String(data)) as { type?: string; data?: { prompt_id?: string } };
      if (msg.type === "execution_error") this.errors++;
      if (msg.type !== "execution_start" && msg.type !== "execution_success") return;
      const id = msg.data?.prompt_id;
      if (typeof id !== "string") return;
      if (msg.type === "execution_success") this.successes.push(t);
      const waiter = this.#waiting[msg.type].get(id);
      if (waiter) {
        this.#waiting[msg.type].delete(id);
        waiter(t);
      } else this.#seen[msg.type].set(id, t);
    });
  }

  /** Connects to `base`'s /ws and waits for its first message (the socket is then registered for its owner). */
  static async open(base: string): Promise<JobSocket> {
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/ws?clientId=bench`);
    const socket = new JobSocket(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("message", () => resolve());
      ws.once("error", reject);
      ws.once("close", () => reject(new Error(`the WebSocket of ${base} closed before its first message`)));
    });
    return socket;
  }

  /** When `jobId`'s message of `kind` arrived (now or later). */
  at(kind: Kind, jobId: string): Promise<bigint> {
    const t = this.#seen[kind].get(jobId);
    if (t !== undefined) {
      this.#seen[kind].delete(jobId);
      return Promise.resolve(t);
    }
    return new Promise((resolve) => this.#waiting[kind].set(jobId, resolve));
  }

  /** Forgets what arrived so far. */
  reset(): void {
    for (const k of ["execution_start", "execution_success"] as const) this.#seen[k].clear();
    this.successes.length = 0;
  }

  close(): void {
    this.#ws.terminate();
  }
}

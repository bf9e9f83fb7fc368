// The hosted WebSocket (/ws) of a flowgate node as the bench's eyes on job starts and ends: it
// follows every job of its owner, so it is open before a job exists (a job's own event stream can
// only be opened once the POST answered, and a fast start may precede that).
import WebSocket from "ws";
import { hrNs } from "./stats.ts";

/** What the socket said of a job first (its start, or its end when the start was not sent), and its end. */
type Kind = "first" | "success";

/** When (process.hrtime ns) each job's first word and success arrived on the socket. */
export class JobSocket {
  readonly #ws: WebSocket;
  readonly #seen: Record<Kind, Map<string, bigint>> = { first: new Map(), success: new Map() };
  readonly #waiting: Record<Kind, Map<string, (t: bigint) => void>> = { first: new Map(), success: new Map() };
  readonly #started = new Set<string>();
  readonly #heard = new Set<string>();
  readonly #succeeded = new Set<string>();
  /** Jobs whose success or error arrived since the last reset. */
  readonly ended = new Set<string>();
  /** execution_error messages (a trivial job must not fail). */
  errors = 0;
  /** A job's second `execution_start` or `execution_success` (each must come once a run). */
  repeated = 0;
  /** Jobs whose `execution_success` came without an `execution_start` before it. */
  startSkipped = 0;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      const t = hrNs();
      const msg = JSON.parse(String(data)) as { type?: string; data?: { prompt_id?: string } };
      const id = msg.data?.prompt_id;
      if (typeof id !== "string") return;
      if (msg.type === "execution_error") {
        this.errors++;
        this.ended.add(id);
      }
      if (msg.type !== "execution_start" && msg.type !== "execution_success") return;
      const done = msg.type === "execution_success";
      const once = done ? this.#succeeded : this.#started;
      if (once.has(id)) {
        this.repeated++;
        return;
      }
      once.add(id);
      if (done && !this.#started.has(id)) this.startSkipped++;
      if (!this.#heard.has(id)) {
        this.#heard.add(id);
        this.#arrived("first", id, t);
      }
      if (done) {
        this.ended.add(id);
        this.#arrived("success", id, t);
      }
    });
  }

  #arrived(kind: Kind, id: string, t: bigint): void {
    const waiter = this.#waiting[kind].get(id);
    if (waiter) {
      this.#waiting[kind].delete(id);
      waiter(t);
    } else this.#seen[kind].set(id, t);
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

  /** When the first word of `jobId` (`kind` "first") or its success arrived (now or later). */
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
    for (const k of ["first", "success"] as const) this.#seen[k].clear();
    this.ended.clear();
  }

  close(): void {
    this.#ws.terminate();
  }
}

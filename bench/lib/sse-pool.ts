// Many SSE clients at once on raw sockets: a hand-written GET, then a byte search on what
// arrives. Cheap enough that 10,000 streams in one process measure the server, not the client.
import net from "node:net";

interface Conn {
  socket: net.Socket;
  /** Everything received so far is not kept: only a tail, for matches split across reads. */
  tail: string;
  headersOk: boolean;
  firstFrame: boolean;
  ended: boolean;
  arrival: bigint | null;
}

const TAIL = 96;

/** A set of open event streams on one job. */
export class SsePool {
  private conns: Conn[] = [];
  private marker: string | null = null;
  private pendingMarker = 0;
  private onAllMarked: (() => void) | null = null;
  private onAllEnded: (() => void) | null = null;
  private endedCount = 0;
  private failure: Error | null = null;

  private readonly host: string;
  private readonly port: number;

  constructor(host: string, port: number) {
    this.host = host;
    this.port = port;
  }

  get size(): number {
    return this.conns.length;
  }

  /** Opens `n` streams on `path`, `parallel` connections being set up at a time; resolves when every one got its first frame. */
  async open(n: number, path: string, parallel = 200, timeoutMs = 120_000): Promise<void> {
    const request = `GET ${path} HTTP/1.1\r\nHost: ${this.host}:${this.port}\r\nAccept: text/event-stream\r\n\r\n`;
    const deadline = Date.now() + timeoutMs;
    let next = 0;
    const worker = async () => {
      while (next < n) {
        next++;
        await this.openOne(request, deadline);
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, n) }, worker));
  }

  private openOne(request: string, deadline: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
      const conn: Conn = { socket, tail: "", headersOk: false, firstFrame: false, ended: false, arrival: null };
      const timer = setTimeout(() => fail(new Error("timed out waiting for the first event")), Math.max(1000, deadline - Date.now()));
      let settled = false;
      const fail = (err: Error) => {
        if (settled) {
          this.failure ??= err;
          return;
        }
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        reject(err);
      };
      socket.on("error", (err) => fail(err));
      socket.on("close", () => {
        if (!conn.ended && conn.firstFrame) {
          conn.ended = true;
          this.noteEnded();
        }
        if (!settled) fail(new Error("connection closed before the first event"));
      });
      socket.on("data", (chunk: Buffer) => {
        const t = process.hrtime.bigint();
        const text = conn.tail + chunk.toString("latin1");
        if (!conn.headersOk) {
          if (!text.startsWith("HTTP/1.1 200")) return fail(new Error(`stream refused: ${text.split("\r\n")[0]}`));
          conn.headersOk = true;
        }
        if (!conn.firstFrame && text.includes("event: status")) {
          conn.firstFrame = true;
          this.conns.push(conn);
          settled = true;
          clearTimeout(timer);
          resolve();
        }
        if (this.marker !== null && conn.arrival === null && text.includes(this.marker)) {
          conn.arrival = t;
          if (--this.pendingMarker === 0) this.onAllMarked?.();
        }
        if (!conn.ended && text.includes("\r\n0\r\n\r\n")) {
          conn.ended = true;
          this.noteEnded();
        }
        conn.tail = text.length > TAIL ? text.slice(-TAIL) : text;
      });
      socket.write(request);
    });
  }

  private noteEnded(): void {
    this.endedCount++;
    if (this.endedCount >= this.conns.length) this.onAllEnded?.();
  }

  /**
   * From now on, records when each stream receives `marker`; resolves with every arrival time
   * (process.hrtime ns) once all streams have it, or rejects at the deadline.
   */
  arm(marker: string, timeoutMs = 60_000): Promise<bigint[]> {
    this.marker = marker;
    this.pendingMarker = this.conns.length;
    for (const c of this.conns) c.arrival = null;
    return new Promise<bigint[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        const got = this.conns.filter((c) => c.arrival !== null).length;
        reject(new Error(`only ${got} of ${this.conns.length} streams received ${marker} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.onAllMarked = () => {
        clearTimeout(timer);
        resolve(this.conns.map((c) => c.arrival!));
      };
      if (this.pendingMarker === 0) this.onAllMarked();
    });
  }

  /** Waits until every stream's response ended (or the deadline). */
  async ended(timeoutMs = 30_000): Promise<boolean> {
    if (this.endedCount >= this.conns.length) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.onAllEnded = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** A failure seen after a stream was open (a reset, a refused stream). */
  get error(): Error | null {
    return this.failure;
  }

  /** Closes every connection. */
  async close(): Promise<void> {
    for (const c of this.conns) c.socket.destroy();
    this.conns = [];
    await new Promise((r) => setImmediate(r));
  }
}

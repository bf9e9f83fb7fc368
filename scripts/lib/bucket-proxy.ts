// Shared by the tests (test/blobs/bucket-proxy.ts re-exports it) and `npm run chaos`.
// An HTTP proxy between flowgate and the bucket, to cut the bucket off (every connection is
// reset, in flight or new), heal it, and answer throttling (503 SlowDown) for some requests.
import { request as httpRequest, createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface BucketProxy {
  /** The proxy's endpoint, to give flowgate instead of the bucket's. */
  endpoint: string;
  /** Resets every connection, now and until heal(). */
  cut(): void;
  heal(): void;
  /** Answers the next `n` requests 503 SlowDown. */
  throttle(n: number): void;
  /** Holds (never forwards) the requests `match` picks, until drop() resets them. */
  hold(match: (method: string, url: string) => boolean): void;
  /** Requests held so far. */
  readonly held: number;
  /** Resets the held requests' connections and stops holding. */
  drop(): void;
  /** Holds every request `ms` before passing it on (0: at once): a bucket that answers slowly. */
  delay(ms: number): void;
  /** Requests answered 503 SlowDown so far. */
  readonly throttled: number;
  /** Requests passed to the bucket so far. */
  readonly forwarded: number;
  /** Connections reset because the bucket was cut, so far (a client knocking at it). */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startBucketProxy(target: string): Promise<BucketProxy> {
  const to = new URL(target);
  let cut = false;
  let throttle = 0;
  let throttled = 0;
  let forwarded = 0;
  let refused = 0;
  const sockets = new Set<Socket>();
  let holding: ((method: string, url: string) => boolean) | null = null;
  let delayMs = 0;
  const heldSockets: Socket[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (cut) {
      refused++;
      return void req.socket.destroy();
    }
    if (throttle > 0) {
      throttle--;
      throttled++;
      req.resume();
      res.writeHead(503, { "content-type": "application/xml" });
      return void res.end('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
    }
    if (holding?.(req.method ?? "", req.url ?? "")) return void heldSockets.push(req.socket);
    if (delayMs > 0) {
      req.pause();
      return void setTimeout(() => !req.socket.destroyed && forward(req, res), delayMs);
    }
    forward(req, res);
  });
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    forwarded++;
    const upstream = httpRequest({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.on("error", () => req.socket.destroy());
    });
    upstream.on("error", () => req.socket.destroy());
    req.pipe(upstream);
  };
  server.on("connection", (socket) => {
    if (cut) {
      refused++;
      return void socket.destroy();
    }
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    heal() {
      cut = false;
    },
    hold(match) {
      holding = match;
    },
    get held() {
      return heldSockets.length;
    },
    drop() {
      holding = null;
      for (const s of heldSockets) s.destroy();
    },
    delay(ms: number) {
      delayMs = ms;
    },
    throttle(n: number) {
      throttle = n;
    },
    get throttled() {
      return throttled;
    },
    get forwarded() {
      return forwarded;
    },
    get refused() {
      return refused;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// An upload refused early (too large, a type the route does not take) reaches a client that is
// still sending as the answer, never as a reset connection: the server answers, then reads and
// drops what the client still sends (up to a bound) before it closes.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pngOf } from "../engine/helpers.ts";
import { startTestServer, type TestServer } from "../hosted/hosted-server.ts";

const MB = 1024 * 1024;
const BODY_MB = 48;

/** A raw HTTP/1.1 POST whose body (`BODY_MB` MiB) is written as fast as the socket takes it; what the server answered. */
function rawPost(url: string, path: string, headers: Record<string, string>, prefix: Buffer): Promise<{ response: string; writeError: string | null }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    let writeError: string | null = null;
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    socket.on("error", (err: NodeJS.ErrnoException) => {
      writeError = err.code ?? err.message;
      // A reset before anything was read is the failure this file is about.
      if (received.length === 0) reject(err);
    });
    socket.on("close", () => resolve({ response: Buffer.concat(received).toString("latin1"), writeError }));
    const head = [
      `POST ${path} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      `Content-Length: ${prefix.length + BODY_MB * MB}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    socket.write(`${head.join("\r\n")}\r\n\r\n`);
    socket.write(prefix);
    const chunk = Buffer.alloc(MB, 0x61);
    let sent = 0;
    const pump = () => {
      while (sent < BODY_MB && !socket.destroyed) {
        sent++;
        if (!socket.write(chunk)) return void socket.once("drain", pump);
      }
    };
    pump();
  });
}

/** The same through fetch (undici) with a streaming body. */
async function fetchPost(url: string, headers: Record<string, string>, prefix: Buffer): Promise<{ status: number; body: any }> {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(prefix));
    },
    pull(controller) {
      if (sent++ >= BODY_MB) return controller.close();
      controller.enqueue(new Uint8Array(MB).fill(0x61));
    },
  });
  const res = await fetch(url, { method: "POST", headers, body, duplex: "half" } as RequestInit);
  return { status: res.status, body: await res.json() };
}

function statusOf(response: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
}

function bodyOf(response: string): any {
  return JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4));
}

describe("an early refusal reaches a client that is still sending", () => {
  let s: TestServer;
  // The mask route refuses bytes that are no image before their size: its file starts as a PNG.
  let png: Buffer;
  beforeAll(async () => {
    s = await startTestServer(["--max-upload-size", "1MB"]);
    png = await pngOf(4, 4, 3, new Array(48).fill(100));
  });
  afterAll(() => s.stop());

  const multipart = { "content-type": "multipart/form-data; boundary=xyz" };
  const filePart = (field: string) => () =>
    Buffer.from(`--xyz\r\ncontent-disposition: form-data; name="${field}"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`);
  const none = () => Buffer.alloc(0);
  const cases: Array<[string, string, Record<string, string>, () => Buffer, number, string]> = [
    ["a JSON body past the body limit", "/api/v2/jobs", { "content-type": "application/json" }, none, 413, "payload_too_large"],
    ["a v2 upload of a type it does not take", "/api/v2/assets", { "content-type": "text/plain" }, none, 400, "invalid_request"],
    ["a v2 upload past --max-upload-size", "/api/v2/assets", multipart, filePart("file"), 413, "payload_too_large"],
    ["a hosted image upload past --max-upload-size", "/api/upload/image", multipart, filePart("image"), 413, "payload_too_large"],
    ["a hosted mask upload past --max-upload-size", "/api/upload/mask", multipart, () => Buffer.concat([filePart("image")(), png]), 413, "payload_too_large"],
  ];
  const codeOf = (body: any) => body?.error?.code ?? body?.error?.type;
  for (const [what, path, headers, prefix, status, code] of cases) {
    it(`${what}: a raw socket reads the ${status}`, async () => {
      const res = await rawPost(s.url, path, headers, prefix());
      expect(statusOf(res.response)).toBe(status);
      expect(codeOf(bodyOf(res.response))).toBe(code);
      expect(res.writeError).toBeNull(); // the server read the whole body: no write failed
    });
    it(`${what}: fetch with a streaming body reads the ${status}`, async () => {
      const res = await fetchPost(`${s.url}${path}`, headers, prefix());
      expect(res.status).toBe(status);
      expect(codeOf(res.body)).toBe(code);
    });
  }
});

// The ComfyUI HTTP client over node:http: keep-alive connections, redirects followed as fetch
// follows them (credentials never to another origin), whole answers within the timeout, and the
// errors the backend's retry rules read (a refused connection is known not sent).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ComfyHttp, ComfyHttpError, ComfyUnreachableError } from "../../src/engine/comfyui/http-api.ts";

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
}

const servers: http.Server[] = [];
const clients: ComfyHttp[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server answering with `answer`, recording every request and counting connections. */
async function serve(answer: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) {
  const seen: Seen[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
      answer(req, res, body);
    });
  });
  server.on("connection", () => connections++);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { seen, url: `http://127.0.0.1:${port}`, port, connections: () => connections };
}

function client(url: string, timeouts = {}): ComfyHttp {
  const c = new ComfyHttp(url, timeouts);
  clients.push(c);
  return c;
}

const json = (res: http.ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
};

describe("ComfyHttp", () => {
  it("keeps one connection for successive requests, and sends the URL's credentials as basic auth", async () => {
    const s = await serve((_req, res) => json(res, 200, { exec_info: { queue_remaining: 2 } }));
    const c = client(`http://user:p%40ss@127.0.0.1:${s.port}/`);
    expect(await c.queueRemaining()).toBe(2);
    expect(await c.queueRemaining()).toBe(2);
    expect(s.connections()).toBe(1);
    expect(s.seen.map((r) => r.authorization)).toEqual([
      `Basic ${Buffer.from("user:p@ss").toString("base64")}`,
      `Basic ${Buffer.from("user:p@ss").toString("base64")}`,
    ]);
  });

  it("follows /view's redirect to the bytes, sending credentials only to the same origin", async () => {
    const other = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "image/png" });
      res.end(Buffer.from("elsewhere"));
    });
    const s = await serve((req, res) => {
      if (req.url!.startsWith("/view?filename=a.png")) {
        res.writeHead(302, { location: "/signed/a.png?sig=1" });
        return res.end("moved");
      }
      if (req.url!.startsWith("/view?filename=b.png")) {
        res.writeHead(302, { location: `${other.url}/b.png` });
        return res.end();
      }
      res.writeHead(200, { "content-type": "image/png" });
      res.end(Buffer.from("the bytes"));
    });
    const c = client(`http://user:pw@127.0.0.1:${s.port}`);
    expect(await c.view({ filename: "a.png", subfolder: "", type: "output" })).toEqual({ bytes: Buffer.from("the bytes"), contentType: "image/png" });
    expect(s.seen.map((r) => [r.url, r.authorization !== undefined])).toEqual([
      ["/view?filename=a.png&subfolder=&type=output", true],
      ["/signed/a.png?sig=1", true],
    ]);
    expect((await c.view({ filename: "b.png", subfolder: "", type: "output" })).bytes).toEqual(Buffer.from("elsewhere"));
    expect(other.seen).toEqual([{ method: "GET", url: "/b.png", authorization: undefined, body: "" }]);
  });

  it("continues a POST answered 303 as a GET without its body, and reports an error status with ComfyUI's body", async () => {
    const s = await serve((req, res) => {
      if (req.method === "POST") {
        res.writeHead(303, { location: "/queue" });
        return res.end();
      }
      json(res, 400, { error: { type: "prompt_no_outputs" } });
    });
    const error = await client(s.url)
      .postPrompt({ prompt: {} })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ComfyHttpError);
    expect(error).toMatchObject({ route: "/prompt", status: 400, body: { error: { type: "prompt_no_outputs" } } });
    expect(s.seen.map((r) => [r.method, r.url, r.body])).toEqual([
      ["POST", "/prompt", JSON.stringify({ prompt: {} })],
      ["GET", "/queue", ""],
    ]);
  });

  it("gives up after the timeout, the fate of the request unknown", async () => {
    const s = await serve(() => undefined); // never answers
    const error = await client(s.url, { request: 100 })
      .queueRemaining()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ComfyUnreachableError);
    expect((error as Error).message).toMatch(/unreachable \(timeout\)/);
    expect((error as ComfyUnreachableError).notSent).toBe(false);
  });

  it("knows a refused connection sent nothing (a prompt may then go elsewhere)", async () => {
    const s = await serve((_req, res) => json(res, 200, {}));
    const port = s.port;
    const server = servers.pop()!;
    await new Promise((r) => server.close(r));
    const error = await client(`http://127.0.0.1:${port}`)
      .postPrompt({ prompt: {} })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ComfyUnreachableError);
    expect((error as ComfyUnreachableError).notSent).toBe(true);
  });
});

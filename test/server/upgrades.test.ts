// Upgrade requests on a real `flowgate serve` process: a client (or a load balancer) resetting its
// connection during or after a WebSocket upgrade must not end the server, and a request that
// offers an upgrade other than the hosted WebSocket (curl --http2's h2c, a WebSocket to a v2 path,
// any upgrade on serverless) is answered as the plain HTTP/1.1 request it also is.
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnCli, type CliServer } from "./helpers.ts";

const servers: CliServer[] = [];
const dirs: string[] = [];
let server: CliServer;

/** `flowgate serve` on a fresh data dir with `flags`. */
async function serve(...flags: string[]): Promise<CliServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "fg-upgrade-"));
  dirs.push(dataDir);
  const s = await spawnCli(["--data-dir", dataDir, "--port", "0", "--shutdown-grace", "0", ...flags]);
  servers.push(s);
  return s;
}

beforeAll(async () => {
  server = await serve("--token", "tok");
});
afterAll(async () => {
  for (const s of servers) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill("SIGKILL");
      await s.exited;
    }
  }
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const WEBSOCKET = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

/**
 * Sends `GET path` with `headers` on a raw socket; resolves with the status line of the answer
 * ("" when the connection ends without one, "no answer" after 5 s). `reset`: reset the connection
 * (RST, not FIN) once the answer starts, or at once after sending.
 */
function rawGet(s: CliServer, path: string, headers: string, reset?: "after-answer" | "at-once"): Promise<string> {
  const { port } = new URL(s.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), "127.0.0.1", () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`);
      if (reset === "at-once") {
        socket.resetAndDestroy();
        resolve("");
      }
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve("no answer");
    }, 5_000);
    socket.once("data", (data) => {
      clearTimeout(timer);
      if (reset) socket.resetAndDestroy();
      else socket.destroy();
      resolve(String(data).split("\r\n")[0]!);
    });
    socket.once("close", () => {
      clearTimeout(timer);
      resolve("");
    });
    socket.on("error", () => undefined);
  });
}

async function alive(s: CliServer): Promise<void> {
  const res = await fetch(`${s.url}/healthz`);
  expect(res.status, s.output()).toBe(200);
  expect(s.child.exitCode, s.output()).toBeNull();
}

describe("upgrade requests", () => {
  it("a refused WebSocket upgrade (401) reset by the client after the answer leaves the server running", async () => {
    expect(await rawGet(server, "/ws?clientId=c&token=wrong", WEBSOCKET, "after-answer")).toBe("HTTP/1.1 401 Unauthorized");
    await alive(server);
  });

  it("upgrades reset at once, before or during the key lookup, and after the handshake, leave it running", async () => {
    for (let i = 0; i < 20; i++) await rawGet(server, `/ws?clientId=c&token=${i % 2 ? "tok" : "wrong"}`, WEBSOCKET, "at-once");
    expect(await rawGet(server, "/ws?clientId=c&token=tok", WEBSOCKET, "after-answer")).toBe("HTTP/1.1 101 Switching Protocols");
    await alive(server);
    expect(server.output()).not.toContain("ECONNRESET");
  });

  it("an h2c upgrade offer (curl --http2) and a WebSocket upgrade to a v2 path are answered as plain HTTP/1.1 requests", async () => {
    const h2c = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n";
    expect(await rawGet(server, "/healthz", h2c)).toBe("HTTP/1.1 200 OK");
    expect(await rawGet(server, "/api/v2/jobs", `${h2c}Authorization: Bearer tok\r\n`)).toBe("HTTP/1.1 200 OK");
    expect(await rawGet(server, "/api/v2/jobs", WEBSOCKET)).toBe("HTTP/1.1 401 Unauthorized"); // the v2 answer, no token given
  });

  it("on serverless (no WebSocket) an upgrade request is answered, and holds no connection that would stall the shutdown", async () => {
    const serverless = await serve("--surface", "serverless");
    expect(await rawGet(serverless, "/ws?clientId=c", WEBSOCKET)).toBe("HTTP/1.1 404 Not Found");
    expect(await rawGet(serverless, "/healthz", "Connection: Upgrade\r\nUpgrade: h2c\r\n")).toBe("HTTP/1.1 200 OK");
    serverless.child.kill("SIGTERM");
    expect(await serverless.exited).toBe(0);
  });
});

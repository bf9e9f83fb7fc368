// A client (or a load balancer) that resets its connection during or after a WebSocket upgrade
// must not end the server: a real `flowgate serve` process, raw sockets that reset.
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnCli, type CliServer } from "./helpers.ts";

let server: CliServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "fg-upgrade-"));
  server = await spawnCli(["--data-dir", dataDir, "--port", "0", "--token", "tok", "--shutdown-grace", "0"]);
});
afterAll(async () => {
  if (server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill("SIGKILL");
    await server.exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

/**
 * Sends a WebSocket upgrade request for `/ws?token=...` on a raw socket and resets the connection
 * (RST, not FIN): once the first bytes of the answer arrive, or at once.
 */
function upgradeThenReset(token: string, when: "after-answer" | "at-once"): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), "127.0.0.1", () => {
      socket.write(
        `GET /ws?clientId=c&token=${token} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      );
      if (when === "at-once") {
        socket.resetAndDestroy();
        resolve("");
      }
    });
    socket.once("data", (data) => {
      socket.resetAndDestroy();
      resolve(String(data).split("\r\n")[0]!);
    });
    socket.on("error", () => resolve(""));
  });
}

async function alive(): Promise<void> {
  const res = await fetch(`${server.url}/healthz`);
  expect(res.status, server.output()).toBe(200);
  expect(server.child.exitCode, server.output()).toBeNull();
}

describe("upgrade requests whose connection is reset", () => {
  it("a refused upgrade (401) reset by the client after the answer leaves the server running", async () => {
    expect(await upgradeThenReset("wrong", "after-answer")).toBe("HTTP/1.1 401 Unauthorized");
    await alive();
  });

  it("upgrades reset at once, before or during the key lookup, and after the handshake, leave it running", async () => {
    for (let i = 0; i < 20; i++) await upgradeThenReset(i % 2 ? "tok" : "wrong", "at-once");
    expect(await upgradeThenReset("tok", "after-answer")).toBe("HTTP/1.1 101 Switching Protocols");
    await alive();
    expect(server.output()).not.toContain("ECONNRESET");
  });
});

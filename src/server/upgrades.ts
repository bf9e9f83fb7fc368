// Which requests become upgrades (the hosted WebSocket only) and what guards the sockets that do.
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";

/**
 * Only a WebSocket upgrade to one of `paths` is an upgrade; any other request that offers one
 * (`Upgrade: h2c` from curl --http2 and some HTTP libraries, a WebSocket to a v2 path, any upgrade
 * on serverless) is served as the plain HTTP/1.1 request it also is, as a server without
 * WebSockets would. Node otherwise hands every upgrade to the `upgrade` listeners once there is
 * one, which dropped those connections (hosted surfaces) or left them unanswered (serverless).
 */
export function upgradeOnlyWebSockets(server: Server, paths: ReadonlySet<string>): void {
  // Node's own hook (24.9 on; @types/node does not declare it yet), read on every upgrade request.
  (server as Server & { shouldUpgradeCallback: (request: IncomingMessage) => boolean }).shouldUpgradeCallback = (request) =>
    (request.headers.upgrade ?? "").toLowerCase() === "websocket" && paths.has(new URL(request.url ?? "/", "http://x").pathname);
}

/**
 * Node takes its own `error` listener off a socket it hands to `upgrade` listeners. Until the
 * WebSocket library adopts the socket (after the key lookup), and after an upgrade refused on the
 * raw socket (401, 429), a peer that resets the connection (a client giving up, a load balancer
 * cutting it) would raise an unhandled `error` and end the process. This listener absorbs it:
 * the socket is destroyed either way.
 */
export function absorbUpgradeSocketErrors(server: Server): void {
  server.on("upgrade", (_request: IncomingMessage, socket: Duplex) => void socket.on("error", () => undefined));
}

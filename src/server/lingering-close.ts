// A connection closed while its client is still sending a request body is reset by the kernel
// (the unread bytes), and the reset can reach the client before it has read the answer: an early
// 413 or 400 then shows as EPIPE or ECONNRESET. As nginx's `lingering_close`, such a connection
// sends its answer and its FIN, then reads and drops what the client still sends, within bounds.
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";

/** Longest a refused connection is read after its answer (nginx's `lingering_time`). */
export const LINGER_MS = 30_000;
/** Longest wait between two reads of a lingering connection (nginx's `lingering_timeout`). */
export const LINGER_IDLE_MS = 5_000;
/** Most bytes read from a lingering connection after its answer. */
export const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * Makes every connection whose answer closes it (`Connection: close`) before its request body
 * was read whole linger: the answer goes out with a FIN, the rest of the body is read and
 * dropped, and the connection is destroyed once the client closes or a bound passes.
 */
export function lingerOnEarlyClose(server: Server): void {
  const current = new WeakMap<Socket, IncomingMessage>();
  server.on("connection", (socket: Socket) => {
    const destroySoon = socket.destroySoon.bind(socket);
    // Node's server calls destroySoon once a closing answer is written.
    socket.destroySoon = () => {
      const request = current.get(socket);
      if (request === undefined || request.complete) return destroySoon();
      linger(socket, request);
    };
  });
  server.on("request", (request: IncomingMessage) => current.set(request.socket as Socket, request));
}

/** Every so often, the lingering connection's bounds are checked (the server's parser reads it, not us). */
const LINGER_CHECK_MS = 250;

function linger(socket: Socket, request: IncomingMessage): void {
  const started = Date.now();
  const startBytes = socket.bytesRead;
  let lastBytes = startBytes;
  let lastRead = started;
  const check = setInterval(() => {
    const now = Date.now();
    if (socket.bytesRead !== lastBytes) [lastBytes, lastRead] = [socket.bytesRead, now];
    if (now - started > LINGER_MS || now - lastRead > LINGER_IDLE_MS || lastBytes - startBytes > LINGER_BYTES) socket.destroy();
  }, LINGER_CHECK_MS).unref();
  socket.once("close", () => clearInterval(check));
  request.resume(); // its body is dropped as it comes
  socket.end(); // the answer, then FIN; the socket stays readable (the server's sockets are half-open)
}

// Requests Node's HTTP parser refuses before Fastify sees them (a bad Content-Length, both
// Content-Length and Transfer-Encoding, control characters in a header, headers or a request
// line over the size limit): answered in the error envelope on the raw socket, like every other
// error, instead of Fastify's own body.
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { components } from "../../generated/openapi-types.ts";

/** How long a refused connection may keep sending before it is cut. */
const DRAIN_MS = 5_000;

/**
 * Fastify's `clientErrorHandler`: writes `invalid_request` in the envelope with HTTP's own status
 * for the failure (431 headers too large, 408 request timeout, 400 otherwise) and closes.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "headers_too_large", "The request line and headers are too large."]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "request_timeout", "The request did not arrive in time."]
        : [400, "malformed_request", "The request is malformed."];
  const envelope: components["schemas"]["ErrorEnvelope"] = { error: { code: "invalid_request", message, details: { fields: [{ field: "", reason }] } } };
  const body = JSON.stringify(envelope);
  // Read on what the client still sends, so that closing does not reset the connection before
  // it has read the answer; cut it if it keeps sending.
  socket.on("data", () => undefined);
  socket.on("error", () => undefined);
  socket.resume();
  setTimeout(() => socket.destroy(), DRAIN_MS).unref();
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

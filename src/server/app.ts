// The Fastify application: body parsing, limits, the error envelope, and the generated routes.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import multipart from "@fastify/multipart";
import type { V2Handlers } from "../../generated/handlers.ts";
import { ServiceError } from "../domain/errors.ts";
import { answerClientError } from "./client-errors.ts";
import { malformedJson, toEnvelope, unsupportedContentType } from "./error-envelope.ts";
import { toHostedError } from "./hosted/hosted-errors.ts";
import type { HandlerContext } from "./handler-context.ts";
import { measureHttp } from "./http-metrics.ts";
import { failureLogOf } from "./failure-log.ts";
import { mountRoutes } from "./mount.ts";
import { operationsHandlers } from "./operations.ts";
import { hostedHandlers } from "./hosted/handlers.ts";
import { HostedSockets, WS_PATHS } from "./hosted/websocket.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { mountUi } from "./ui.ts";
import { absorbUpgradeSocketErrors, upgradeOnlyWebSockets } from "./upgrades.ts";
import * as assets from "./v2/assets.ts";
import { EventStreams } from "./v2/event-stream.ts";
import { FinishedJobViews } from "./v2/finished-job-views.ts";
import { streamJobEventsHandler } from "./v2/events.ts";
import * as jobs from "./v2/jobs.ts";
import { parseJson } from "../domain/exact-json.ts";
import { storageVolumes } from "./storage-volumes.ts";
import { VERSION } from "../domain/version.ts";

declare module "fastify" {
  interface FastifyInstance {
    /** The open v2 event streams (metrics, tests). */
    eventStreams: EventStreams;
    /** The open hosted WebSockets, where the surface serves them (metrics, tests). */
    hostedSockets?: HostedSockets;
    /** Rendered views of finished jobs, for repeated GETs. */
    finishedViews: FinishedJobViews;
  }
}

export interface AppOptions {
  /** pino logger settings, or false for none (tests). */
  logger?: boolean | Record<string, unknown>;
}

/**
 * One access-log line per request, at its end, with the request in it: Fastify's default writes
 * a second line as each request arrives, and every line costs the busy server as much as a
 * fifth of a submission.
 */
class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, "request errored");
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, "request completed");
  }
}

/** Builds the HTTP application over a runtime; closing the app closes its event streams. */
export async function buildApp(runtime: Runtime, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? false,
    logController: new AccessLog(),
    bodyLimit: runtime.config.bodyLimit,
    trustProxy: false,
    return503OnClosing: false,
    clientErrorHandler: answerClientError,
    // A long path parameter reaches its handler (an unknown id, in the route's own shape) instead
    // of the router's 414; the request line and headers are bounded at 16 KB by Node anyway.
    routerOptions: { maxParamLength: 16_384 },
    // Errors raised before routing (a malformed URL) use the envelope too.
    frameworkErrors: (err, _request, reply) => {
      const env = toEnvelope(err);
      void (reply as FastifyReply).code(env.status).headers(env.headers).send(env.body);
    },
  });

  // JSON bodies: any content type that says json; a body that does not parse is `invalid_request`.
  app.removeAllContentTypeParsers();
  // A route flowgate does not serve is 404 whatever its body: the body is never judged.
  app.addContentTypeParser(/^application\/([\w.+-]+\+)?json\b/, { parseAs: "string" }, (request, body, done) =>
    request.is404 ? done(null, undefined) : parseJsonBody(String(body), done),
  );
  // Any other type (and none): the hosted interface reads it as JSON, as ComfyUI does with
  // aiohttp's request.json() (its example scripts and some clients send text/plain or
  // form-urlencoded); v2 refuses it before reading it.
  app.addContentTypeParser("*", (request, payload, done) => {
    if (request.is404) {
      // Read and dropped unparsed, so the 404 goes out on a connection that stays usable.
      (payload as NodeJS.ReadableStream).resume();
      return done(null, undefined);
    }
    if (request.routeOptions.config?.family !== "hosted") return done(unsupportedContentType(), undefined);
    readText(payload, runtime.config.bodyLimit).then(
      (text) => parseJsonBody(text, done),
      (err: unknown) => done(err as Error, undefined),
    );
  });
  const observeUnmatched = measureHttp(app, runtime.metrics);
  await app.register(multipart, { limits: { fileSize: runtime.config.maxUploadBytes + 1, files: 1, fields: 64, fieldSize: 64 * 1024 } });

  app.setErrorHandler((err, request, reply) => {
    // Failures before a handler runs (body parsing, limits) answer in the route's own shape.
    const hosted = request.routeOptions.config?.family === "hosted";
    const env = hosted ? toHostedError(err) : toEnvelope(err);
    if (env.status >= 500) failureLogOf(runtime).note(request.log, err);
    reply.code(env.status).headers(env.headers).send(env.body);
  });
  app.setNotFoundHandler((_request, reply) => {
    const env = toEnvelope(new ServiceError("not_found", "Not found."));
    reply.code(env.status).send(env.body);
    observeUnmatched(reply);
  });

  const streams = new EventStreams(runtime);
  app.decorate("eventStreams", streams);
  app.decorate("finishedViews", new FinishedJobViews());
  // preClose: before the server waits for its connections, which open streams would hold.
  app.addHook("preClose", async () => streams.close());
  endConnectionsOnClose(app);
  absorbUpgradeSocketErrors(app.server);
  upgradeOnlyWebSockets(app.server, runtime.surface.servesHosted ? WS_PATHS : new Set());
  const v2: V2Handlers<HandlerContext> = {
    ...jobs,
    ...assets,
    streamJobEvents: streamJobEventsHandler(streams),
  };
  if (runtime.surface.servesHosted) {
    mountRoutes(app, runtime, { v2, operations: operationsHandlers, hosted: hostedHandlers });
    const sockets = new HostedSockets(runtime);
    sockets.attach(app.server);
    app.decorate("hostedSockets", sockets);
    app.addHook("preClose", async () => sockets.close()); // as the event streams: before the server waits
  } else {
    // Serverless: each deployment at the gateway mount, and on its own host by the Host header.
    mountRoutes(app, runtime, { v2, operations: operationsHandlers });
    mountRoutes(app, runtime, { v2 }, "/deployment/:deployment_id");
  }
  await mountUi(app);
  runtime.metrics.observeSources({
    queueDepth: () => runtime.queue.depth(),
    runningJobs: () => runtime.queue.running(),
    openEventStreams: () => streams.size,
    openWebSockets: () => app.hostedSockets?.size ?? 0,
    upstreams: () => runtime.engine.upstreams?.() ?? [],
    oldestQueuedSeconds: () => runtime.queue.oldestQueuedSeconds(),
    readiness: async () => {
      const checks = await runtime.readiness();
      return { ready: Object.values(checks).every(Boolean), checks };
    },
    storage: () => storageVolumes(runtime),
    busyWorkers: () => runtime.busyWorkers(),
  });
  runtime.metrics.setBuildInfo({
    version: VERSION,
    surface: runtime.config.surface,
    engine: runtime.config.engine,
    store: runtime.config.databaseUrl === null ? "sqlite" : "postgres",
  });
  return app;
}

type ParserDone = (err: Error | null, body?: unknown) => void;

/** Parses a JSON body; empty is no body, anything unparsable `invalid_request` (malformed_json). */
function parseJsonBody(text: string, done: ParserDone): void {
  if (text.trim() === "") return done(null, undefined);
  try {
    done(null, parseJson(text));
  } catch {
    done(malformedJson(), undefined);
  }
}

/** Reads a request body as UTF-8, up to `limit` bytes (413 `payload_too_large` beyond). */
async function readText(payload: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    size += chunk.length;
    if (size > limit) throw new ServiceError("payload_too_large", "The request body is too large.");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * On close, every connection is ended as soon as it has no response in flight: at once when idle
 * or request-less (a pre-connect), after its response when busy. Node's close() ends only the
 * connections idle at that moment; a keep-alive one that frees up later would hold it open.
 * Upgraded connections (WebSockets) are left to their owner.
 */
function endConnectionsOnClose(app: FastifyInstance): void {
  const inFlight = new Map<Socket, number>();
  let closing = false;
  const endIfIdle = (socket: Socket) => {
    if (closing && inFlight.get(socket) === 0) socket.end(() => socket.destroy());
  };
  app.server.on("connection", (socket: Socket) => {
    inFlight.set(socket, 0);
    socket.once("close", () => inFlight.delete(socket));
  });
  app.server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as Socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    response.once("close", () => {
      if (inFlight.has(socket)) inFlight.set(socket, inFlight.get(socket)! - 1);
      endIfIdle(socket);
    });
  });
  app.server.on("upgrade", (request: IncomingMessage) => void inFlight.delete(request.socket as Socket));
  app.addHook("preClose", async () => {
    closing = true;
    for (const socket of inFlight.keys()) endIfIdle(socket);
  });
}

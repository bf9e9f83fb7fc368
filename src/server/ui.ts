// The pages: the dashboard at /, the API reference at /docs and the event catalogue at
// /docs/events, from the UI build (ui/dist, `npm run build:ui`) under /ui/; and the contract
// documents they render, from spec/. Pages hold no data: the dashboard calls the API with the
// caller's own token.
import { existsSync, readdirSync, statSync } from "node:fs";
import { extname, join, relative, resolve, sep } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";
import { ServiceError } from "../domain/errors.ts";
import { COMPRESSIBLE, sendCompressed } from "./compressed-files.ts";
import { toEnvelope } from "./error-envelope.ts";
import type { MetricsRouteConfig } from "./http-metrics.ts";

/** The package root: two levels up in a checkout (src/server), three from the build (dist/src/server). */
const ROOT =
  [resolve(import.meta.dirname, "../.."), resolve(import.meta.dirname, "../../..")].find((dir) => existsSync(resolve(dir, "spec/openapi.yaml"))) ??
  resolve(import.meta.dirname, "../..");
/** Where `npm run build:ui` writes the pages. */
export const UI_DIST = resolve(ROOT, "ui/dist");
const SPEC_DIR = resolve(ROOT, "spec");

/** Every file of the build is measured as one route, the static wildcard's, whatever its (hashed) name. */
const STATIC_FILES: MetricsRouteConfig = { metricsRoute: "/ui/*" };

/** Serves the pages and the spec documents; without a UI build the pages answer 404 saying so. */
export async function mountUi(app: FastifyInstance, dist = UI_DIST): Promise<void> {
  const built = existsSync(resolve(dist, "index.html"));
  // Hashed assets (ui/dist/assets) never change; everything else is revalidated on every load.
  await app.register(fastifyStatic, {
    root: built ? dist : SPEC_DIR,
    prefix: "/ui/",
    serve: built,
    index: false,
    cacheControl: false,
    setHeaders: (res, path) => res.setHeader("cache-control", path.startsWith(resolve(dist, "assets")) ? "public, max-age=31536000, immutable" : "no-cache"),
  });
  // Large text files (the API reference's 4.3 MB Scalar bundle) go compressed, by routes of their
  // own, which Fastify prefers to the static wildcard.
  if (built) {
    for (const file of largeTextFiles(dist)) {
      const rel = relative(dist, file).split(sep).join("/");
      const cacheControl = rel.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache";
      app.get(`/ui/${rel}`, { config: STATIC_FILES }, (request, reply) => sendCompressed(request, reply, file, COMPRESSIBLE[extname(file)]!, cacheControl));
    }
  }
  const fresh = { cacheControl: false } as const;
  const page = (file: string) => async (_request: unknown, reply: FastifyReply) => {
    if (!built) {
      const env = toEnvelope(new ServiceError("not_found", "The dashboard is not built: run `npm run build:ui`."));
      return reply.code(env.status).send(env.body);
    }
    return reply.header("cache-control", "no-cache").sendFile(file, dist, fresh);
  };
  app.get("/", page("index.html"));
  app.get("/docs", page("docs.html"));
  app.get("/docs/events", page("events.html"));
  for (const file of ["openapi.yaml", "asyncapi.yaml"]) {
    app.get(`/docs/${file}`, async (_request, reply) =>
      reply.header("cache-control", "no-cache").type("application/yaml; charset=utf-8").sendFile(file, SPEC_DIR, fresh),
    );
  }
}

/** Files of `dir` (recursively) worth compressing: a compressible type and at least 8 KiB. */
function largeTextFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((name) => join(dir, name))
    .filter((file) => COMPRESSIBLE[extname(file)] !== undefined && statSync(file).isFile() && statSync(file).size >= 8 * 1024);
}

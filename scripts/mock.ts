// `npm run mock [-- --port N]`: the Prism mock of spec/openapi.yaml on 127.0.0.1, serving the
// examples. Prism listens on a private port behind a small proxy that gives its errors the
// contract's envelope and codes (scripts/mock-errors.ts). SIGINT, SIGTERM or SIGHUP stop both, as
// does the end of npm's shell under `npm run mock` (src/cli/parent-watch.ts).
import { spawn } from "node:child_process";
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createNetServer } from "node:net";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadOpenApi, ROOT } from "../generators/spec-files.ts";
import { stopWhenOrphaned } from "../src/cli/parent-watch.ts";
import { explainParseError } from "../src/cli/suggest.ts";
import { errorTable, fixError, type Violation } from "./mock-errors.ts";

const OPTIONS = {
  port: { type: "string", default: process.env.FLOWGATE_MOCK_PORT ?? "4010" }, // --port: where the mock listens
  host: { type: "string", default: "127.0.0.1" }, // --host: interface to bind
  dynamic: { type: "boolean", default: false }, // --dynamic: generate data from schemas instead of examples
} as const;
let values: { port: string; host: string; dynamic: boolean };
try {
  values = parseArgs({ options: OPTIONS }).values;
} catch (err) {
  process.stderr.write(`mock: ${explainParseError((err as Error).message, Object.keys(OPTIONS))}\nUsage: npm run mock -- [--port N] [--host H] [--dynamic]\n`);
  process.exit(2);
}

/** A port free on the loopback interface now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer().once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

const table = errorTable(loadOpenApi());
const prismPort = await freePort();
const args = ["mock", path.join(ROOT, "spec", "openapi.yaml"), "-h", "127.0.0.1", "-p", String(prismPort)];
if (values.dynamic) args.push("--dynamic");
const prism = spawn(path.join(ROOT, "node_modules", ".bin", "prism"), args, { stdio: ["ignore", "inherit", "inherit"] });

let stopping = false;
/** Stops the proxy and Prism, then exits. */
function stop(code: number): void {
  if (stopping) return;
  stopping = true;
  proxy.close();
  proxy.closeAllConnections();
  if (prism.exitCode === null && prism.signalCode === null) {
    prism.once("exit", () => process.exit(code));
    prism.kill("SIGTERM");
  } else {
    process.exit(code);
  }
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => stop(0));
stopWhenOrphaned(() => stop(0)); // npm run mock: npm's SIGTERM ends its shell, not this process
prism.on("exit", (code) => stop(code ?? 1));

/** Passes a request to Prism, and its answer back; an error answer gets the contract's envelope. */
function forward(req: IncomingMessage, res: ServerResponse): void {
  const upstream = request({ host: "127.0.0.1", port: prismPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    const status = answer.statusCode ?? 502;
    if (status < 400) {
      res.writeHead(status, answer.headers);
      answer.pipe(res);
      return;
    }
    const chunks: Buffer[] = [];
    answer.on("data", (c: Buffer) => chunks.push(c));
    answer.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: replaced below
      }
      let violations: Violation[] = [];
      try {
        violations = JSON.parse(String(answer.headers["sl-violations"] ?? "[]")) as Violation[];
      } catch {
        // no findings
      }
      const fixed = fixError(table, req.method ?? "GET", new URL(req.url ?? "/", "http://mock").pathname, status, body, violations);
      if (fixed === null) {
        res.writeHead(status, answer.headers).end(text);
        return;
      }
      const out = JSON.stringify(fixed.body);
      const headers = { ...answer.headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(out)) };
      delete headers["transfer-encoding"];
      res.writeHead(fixed.status, headers).end(out);
    });
  });
  upstream.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: "upstream_error", message: `The Prism mock did not answer: ${err.message}` } }));
  });
  req.pipe(upstream);
}

const proxy = createServer(forward);

// Listen only once Prism answers, so that whoever waits for the port gets the mock.
for (;;) {
  if (stopping) break;
  const up = await fetch(`http://127.0.0.1:${prismPort}/healthz`).then(
    () => true,
    () => false,
  );
  if (up) break;
  await new Promise((r) => setTimeout(r, 200));
}
if (!stopping) {
  proxy.listen(Number(values.port), values.host, () =>
    process.stdout.write(`flowgate mock: the Prism mock of spec/openapi.yaml on http://${values.host}:${values.port}\n`),
  );
}

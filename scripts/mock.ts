// `npm run mock [-- --port N]`: the Prism mock of spec/openapi.yaml on 127.0.0.1, serving the examples.
import { spawn } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { ROOT } from "../generators/spec-files.ts";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: process.env.FLOWGATE_MOCK_PORT ?? "4010" }, // --port: where the mock listens
    host: { type: "string", default: "127.0.0.1" }, // --host: interface to bind
    dynamic: { type: "boolean", default: false }, // --dynamic: generate data from schemas instead of examples
  },
});
const args = ["mock", path.join(ROOT, "spec", "openapi.yaml"), "-h", values.host!, "-p", values.port!];
if (values.dynamic) args.push("--dynamic");
const child = spawn(path.join(ROOT, "node_modules", ".bin", "prism"), args, { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code) => process.exit(code ?? 0));

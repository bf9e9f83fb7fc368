// The ComfyUI double (fake-comfyui.ts, with its worker) in a process of its own, so that it
// outlives flowgate's processes and can itself be killed and restarted (its queue and history
// lost, as ComfyUI's are). Every execution's start and end is appended to a log file, which
// outlives the double: the count of executions per prompt id survives its restarts.
// With --hold, the first prompt it runs stops at its first node until the double gets SIGUSR1 (a
// prompt whose end the harness places: e.g. finishing in the middle of a takeover). With
// --hold-post N, the Nth POST /prompt it receives lands (is queued and answered) only once the
// double gets SIGUSR2: a POST on its way while its sender is stopped (the harness places its
// landing). Each landing is logged too (`queued`, with the client id that posted it).
//   node test/comfyui/double-process.ts --object-info FILE --log FILE [--port N] [--run-ms N] [--hold] [--hold-post N]
// Prints `double listening on URL` once it answers, and `double holding POST /prompt of ID` when it holds one.
import { appendFileSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { FakeComfyUI } from "./fake-comfyui.ts";

const { values } = parseArgs({
  options: {
    "object-info": { type: "string" },
    log: { type: "string" },
    port: { type: "string", default: "0" },
    "run-ms": { type: "string", default: "0" },
    hold: { type: "boolean", default: false },
    "hold-post": { type: "string", default: "0" },
  },
});
const holdPost = Number(values["hold-post"]);
let posts = 0;
let land: (() => void) | null = null;
process.on("SIGUSR2", () => land?.());
const log = values.log!;
const runMs = Number(values["run-ms"]);
const fake = await new FakeComfyUI({
  objectInfo: JSON.parse(readFileSync(values["object-info"]!, "utf8")),
  worker: true,
  runMs: () => runMs,
  onRequest: async (r) => {
    if (r.method !== "POST" || r.path !== "/prompt" || typeof r.json?.prompt_id !== "string") return;
    const held = ++posts === holdPost;
    if (held) {
      process.stdout.write(`double holding POST /prompt of ${r.json.prompt_id}\n`);
      await new Promise<void>((resolve) => (land = resolve));
    }
    // Queued right after this (the same turn): its landing.
    appendFileSync(log, `${JSON.stringify({ type: "queued", promptId: r.json.prompt_id, at: Date.now(), client: r.json.client_id ?? null, held })}\n`);
    if (held) process.stdout.write(`double landed POST /prompt of ${r.json.prompt_id}\n`);
  },
  // Synchronous: a record is on disk before the double goes on (a SIGKILL loses none).
  onExecution: (e) => appendFileSync(log, `${JSON.stringify(e)}\n`),
}).start(Number(values.port));
fake.holding = values.hold === true;
process.on("SIGUSR1", () => fake.release());
process.stdout.write(`double listening on ${fake.url}\n`);
process.on("SIGTERM", () => void fake.stop().then(() => process.exit(0)));

// `npm run explore:orders -- --seeds 200 [--first-seed N]`: runs the order-exploring harness of
// exactly-once in front of ComfyUI (test/comfyui/orders.test.ts) over many seeded schedules
// (`--seed N` replays one). Each seed is printed; a failure names the seed that replays it.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { seeds: { type: "string", default: "50" }, "first-seed": { type: "string" }, seed: { type: "string" } },
});
const root = path.resolve(import.meta.dirname, "..");
const env: NodeJS.ProcessEnv = { ...process.env, EXPLORE_ORDERS_SEEDS: values.seeds };
if (values["first-seed"] !== undefined) env.EXPLORE_ORDERS_FIRST_SEED = values["first-seed"];
if (values.seed !== undefined) env.EXPLORE_ORDERS_SEED = values.seed;
const run = spawnSync(path.join(root, "node_modules", ".bin", "vitest"), ["run", "test/comfyui/orders.test.ts"], { cwd: root, env, stdio: "inherit" });
process.exit(run.status ?? 1);

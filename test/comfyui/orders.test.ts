// Exactly once in front of ComfyUI, over the orders deployments produce (orders.ts): a bounded
// number of seeded schedules per run (each seed printed; EXPLORE_ORDERS_SEED=N replays one,
// EXPLORE_ORDERS_SEEDS=N runs N; EXPLORE_ORDERS_TRACE=1 prints each passing seed's steps too; `npm run explore:orders -- --seeds 200` runs many).
// A prompt run twice in a case docs/comfyui.md names is printed with its seed, and counted at the end.
import { afterAll, describe, it } from "vitest";
import { deploymentPerTest } from "../faults/deployment.ts";
import { postgresUnavailable } from "../postgres/pg.ts";
import { exploreOrder, exploreSqliteFront } from "./orders.ts";

const unavailable = await postgresUnavailable();
/** The workers' lease: takeovers come soon, renewals still hold on a busy machine. */
const LEASE_MS = 3000;
/** The API node's: it leaves a job a worker in front of ComfyUI held to the adopters. */
const API_LEASE_MS = 60_000;

const replay = process.env.EXPLORE_ORDERS_SEED;
const count = Number(process.env.EXPLORE_ORDERS_SEEDS ?? 2);
const first = Number(process.env.EXPLORE_ORDERS_FIRST_SEED ?? Math.floor(Math.random() * 1_000_000));
const seeds = replay !== undefined ? [Number(replay)] : Array.from({ length: count }, (_, i) => first + i);

/** The documented windows met (a prompt run twice in one of them, see orders.ts), printed at the end. */
const windows: string[] = [];
let ran = 0;

const d = deploymentPerTest(unavailable);

describe.skipIf(unavailable !== null)(
  "every prompt runs once, whatever the order of deaths and takeovers (PostgreSQL, the double in a process of its own)",
  () => {
    for (const seed of seeds) {
      it(`seed ${seed}`, { timeout: 240_000 }, async () => {
        console.log(`orders: seed ${seed} (replay: EXPLORE_ORDERS_SEED=${seed} npx vitest run test/comfyui/orders.test.ts)`);
        const met = await exploreOrder(seed, { d, leaseMs: LEASE_MS, apiLeaseMs: API_LEASE_MS });
        ran++;
        for (const w of met) console.log(`orders: documented window met, ${w}`);
        windows.push(...met);
      });
    }
  },
);

describe("every prompt runs once when a single SQLite front is killed and restarted mid-run (the double in a process of its own)", () => {
  for (const seed of seeds) {
    it(`seed ${seed}`, { timeout: 240_000 }, async () => {
      console.log(`orders (SQLite front): seed ${seed} (replay: EXPLORE_ORDERS_SEED=${seed} npx vitest run test/comfyui/orders.test.ts)`);
      await exploreSqliteFront(seed);
    });
  }
});

afterAll(() => {
  if (ran > 0)
    console.log(`orders: ${ran} PostgreSQL seed(s) passed; documented windows met in them: ${windows.length}${windows.map((w) => `\n  ${w}`).join("")}`);
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);

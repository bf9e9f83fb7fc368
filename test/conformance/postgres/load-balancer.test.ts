// The conformance suite against the scale-out deployment on PostgreSQL: two API nodes
// (`serve --no-dispatch`) behind HAProxy, which alternates requests between them, and two workers
// running the jobs (test/server/postgres/deployment.ts). Issue #18's proof that the contract
// holds whichever node a request lands on and whichever process runs the job.
import { describe, expect, it } from "vitest";
import { runConformance } from "../../../conformance/index.ts";
import { openDirectory } from "../../../src/store/index.ts";
import { postgresUnavailable } from "../../postgres/pg.ts";
import { redisUnavailable, TEST_REDIS_URL } from "../../postgres/redis.ts";
import { startDeployment, type Deployment, type DeploymentOptions } from "../../server/postgres/deployment.ts";
import { haproxyUnavailable } from "../../server/postgres/haproxy.ts";
import { accountKey, failureLines, FAST } from "../helpers.ts";

const unavailable = (await postgresUnavailable()) ?? (await redisUnavailable()) ?? (await haproxyUnavailable());

/** Settings of every API node, as the single-server conformance test uses them. */
const NODE_FLAGS = ["--queue-limit", "6"];

/** Runs `body` against a deployment of its own (previews between processes through Redis), stopped after even on failure. */
async function withDeployment(options: DeploymentOptions, body: (d: Deployment) => Promise<void>): Promise<void> {
  const d = await startDeployment({ redisUrl: TEST_REDIS_URL, ...options });
  try {
    await body(d);
  } finally {
    await d.stop();
  }
}

// One surface after the other: run side by side on two cores they take as long and time out more.
describe.skipIf(unavailable !== null)("the contract through HAProxy over two API nodes and two workers", () => {
  it("self-hosted, with a static token", async () => {
    await withDeployment({ nodeFlags: [...NODE_FLAGS, "--token", "static-token"] }, async (d) => {
      const report = await runConformance({ ...FAST, oversizeMb: 12, baseUrl: d.lb.url, surface: "self-hosted", token: "static-token", fillQueue: 12 });
      expect(report.ok, failureLines(report)).toBe(true);
    });
  }, 120_000);

  it("cloud, with a second account, one without credits and one not allowed", async () => {
    await withDeployment({ nodeFlags: [...NODE_FLAGS, "--surface", "cloud"], workerFlags: ["--surface", "cloud"] }, async (d) => {
      // The accounts and keys live in the database every node reads.
      const dir = await openDirectory({ kind: "postgres", url: d.databaseUrl });
      try {
        const report = await runConformance({
          ...FAST,
          oversizeMb: 12,
          baseUrl: d.lb.url,
          surface: "cloud",
          token: await accountKey(dir, "a"),
          otherToken: await accountKey(dir, "b"),
          noCreditsToken: await accountKey(dir, "poor", { credits: 0 }),
          forbiddenToken: await accountKey(dir, "lapsed", { subscription_active: false }),
          fillQueue: 12,
        });
        expect(report.ok, failureLines(report)).toBe(true);
      } finally {
        await dir.close();
      }
    });
  }, 120_000);
});

if (unavailable !== null) it.skip(`skipped: ${unavailable}`, () => undefined);

// The conformance suite against the reference server, on each of the three surfaces, with every
// optional input the suite can use: the project's own proof that it keeps the contract.
import { afterAll, describe, expect, it } from "vitest";
import { runConformance } from "../../conformance/index.ts";
import { openDirectory, type Directory } from "../../src/store/index.ts";
import { startTestServer, type TestServer } from "../hosted/hosted-server.ts";
import type { Report } from "../../conformance/index.ts";
import { accountKey, belowRecordedCoverage, coverageGaps, failureLines, FAST, FLOWGATE_NEVER_SENDS } from "./helpers.ts";

/**
 * The verdict on a run against flowgate: every rule kept, every operation and message reached, at
 * least the recorded statuses and query parameters of `surface`; where the hosted interface is
 * served, HOST-5's non-retryable side reached (the embedded engine fails an upload that is no
 * image with invalid_input), not skipped.
 */
function expectKept(report: Report, surface: string, hosted: boolean): void {
  // Recorded before the verdict, so that FLOWGATE_RECORD_COVERAGE=1 records even a run with a failure.
  const below = belowRecordedCoverage(report, surface);
  expect(report.ok, failureLines(report)).toBe(true);
  expect(coverageGaps(report, FLOWGATE_NEVER_SENDS)).toEqual([]);
  expect(below).toEqual([]);
  if (hosted) {
    const nonRetryable = report.results.find((r) => r.title.startsWith("HOST-5 a prompt that fails on its input"));
    expect(nonRetryable?.status, nonRetryable?.reason).toBe("passed");
  }
}

describe("the reference server keeps the contract", () => {
  let server: TestServer | null = null;
  let dir: Directory | null = null;
  afterAll(async () => {
    await dir?.close();
    await server?.stop();
  });

  async function start(flags: string[]): Promise<void> {
    await dir?.close();
    await server?.stop();
    server = await startTestServer([...flags, "--concurrency", "2", "--queue-limit", "6"]);
    dir = flags.includes("self-hosted") ? null : await openDirectory(server.directory);
  }

  it("self-hosted, with a static token", async () => {
    await start(["--surface", "self-hosted", "--token", "static-token"]);
    const report = await runConformance({
      ...FAST,
      explore: 3,
      oversizeMb: 12,
      baseUrl: server!.url,
      surface: "self-hosted",
      token: "static-token",
      fillQueue: 12,
    });
    expectKept(report, "self-hosted", true);
  }, 300_000);

  it("cloud, with a second account, one without credits and one not allowed", async () => {
    await start(["--surface", "cloud"]);
    const report = await runConformance({
      ...FAST,
      explore: 3,
      oversizeMb: 12,
      baseUrl: server!.url,
      surface: "cloud",
      token: await accountKey(dir!, "a"),
      otherToken: await accountKey(dir!, "b"),
      noCreditsToken: await accountKey(dir!, "poor", { credits: 0 }),
      forbiddenToken: await accountKey(dir!, "lapsed", { subscription_active: false }),
      fillQueue: 12,
    });
    expectKept(report, "cloud", true);
  }, 300_000);

  it("serverless behind the gateway mount, with deployments not ready and stopped", async () => {
    await start(["--surface", "serverless"]);
    for (const [id, state] of [
      ["app", "ready"],
      ["warming", "provisioning"],
      ["gone", "stopped"],
    ] as const) {
      await dir!.createDeployment({ id, state, demo: false, created_at: Date.now() });
    }
    const report = await runConformance({
      ...FAST,
      explore: 3,
      oversizeMb: 12,
      baseUrl: `${server!.url}/deployment/app`,
      surface: "serverless",
      token: await accountKey(dir!, "a"),
      otherToken: await accountKey(dir!, "b"),
      noCreditsToken: await accountKey(dir!, "poor", { credits: 0 }),
      forbiddenToken: await accountKey(dir!, "lapsed", { subscription_active: false }),
      notReadyUrl: `${server!.url}/deployment/warming`,
      stoppedUrl: `${server!.url}/deployment/gone`,
      fillQueue: 12,
    });
    // The hosted interface is not served under a deployment's mount.
    expectKept(report, "serverless", false);
  }, 300_000);

  it("the serverless demo deployment", async () => {
    await start(["--surface", "serverless"]);
    await dir!.createDeployment({ id: "demo", state: "ready", demo: true, created_at: Date.now() });
    const report = await runConformance({ ...FAST, explore: 3, oversizeMb: 12, baseUrl: `${server!.url}/deployment/demo`, surface: "serverless", demo: true });
    expectKept(report, "demo", false);
  }, 300_000);

  it("self-hosted declining labels (--labels off): the labels checks skip, saying why, and LBL-6 passes", async () => {
    await start(["--surface", "self-hosted", "--labels", "off"]);
    const report = await runConformance({ ...FAST, baseUrl: server!.url, surface: "self-hosted", only: ["LBL"] });
    expect(report.ok, failureLines(report)).toBe(true);
    const lbl = report.results.filter((r) => r.kind === "check");
    expect(lbl.find((r) => r.rule === "LBL-6")?.status).toBe("passed");
    for (const rule of ["LBL-1", "LBL-3", "LBL-4", "LBL-7"]) expect(lbl.find((r) => r.rule === rule)?.reason, rule).toMatch(/declines labels/);
  }, 300_000);
});

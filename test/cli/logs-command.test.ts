// `flowgate logs <id>` as a user runs it: the log of a finished serverless job on standard output,
// its control characters dropped; a note and exit 0 where the server serves no log.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowgateClient } from "../../src/index.ts";
import { openDirectory } from "../../src/store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";
import { imageGraph, startTestServer, type TestServer } from "../client/fixtures.ts";
import { runCli } from "./cli.ts";

let serverless: TestServer;
let selfHosted: TestServer;
let key: string;

beforeAll(async () => {
  serverless = await startTestServer(["--surface", "serverless", "--serverless-domain", "example.test"]);
  selfHosted = await startTestServer();
  const dir = await openDirectory(serverless.dataDir);
  await dir.ensureAccount("acme", { tier: "free", credits: 1000, now: Date.now() });
  key = generateApiKey();
  await dir.addApiKey({ key_hash: hashApiKey(key), account: "acme", prefix: keyPrefix(key), created_at: Date.now(), revoked_at: null });
  await dir.createDeployment({ id: "app", state: "ready", demo: false, created_at: Date.now() });
  await dir.close();
});
afterAll(async () => {
  await serverless?.stop();
  await selfHosted?.stop();
});

describe("flowgate logs", () => {
  it("prints a finished job's log from its urls.logs link, without terminal control characters; --json the JobLogs", async () => {
    const base = `${serverless.url}/deployment/app`;
    const client = new FlowgateClient({ baseUrl: base, token: key });
    const job = await client.wait(await client.submit({ "1": { class_type: "FlowgatePrint", inputs: { text: "plain line\u001b[2Jafter escape" } } }));
    const env = { FLOWGATE_BASE_URL: base, FLOWGATE_TOKEN: key };
    const text = await runCli(["logs", job.id], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("plain line[2Jafter escape");
    expect(text.stdout).not.toContain("\u001b");
    const json = await runCli(["logs", job.id, "--json"], env);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ truncated: false, complete: true });
    expect(JSON.parse(json.stdout).text).toContain("\u001b[2J");
  });

  it("says where there is no log and exits 0; an unknown job is an error", async () => {
    const client = new FlowgateClient({ baseUrl: selfHosted.url });
    const job = await client.wait(await client.submit(imageGraph("cli-logs")));
    const none = await runCli(["logs", job.id], { FLOWGATE_BASE_URL: selfHosted.url });
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain(`job ${job.id} has no log`);
    expect((await runCli(["logs", job.id, "--json"], { FLOWGATE_BASE_URL: selfHosted.url })).stdout.trim()).toBe("null");
    const missing = await runCli(["logs", "0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42"], { FLOWGATE_BASE_URL: selfHosted.url });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("flowgate logs:");
    expect((await runCli(["logs"], { FLOWGATE_BASE_URL: selfHosted.url })).code).toBe(2);
  });
});

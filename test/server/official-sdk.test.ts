// The official v2 SDK's listing, cursor and logs calls (issue #50), replayed request by request
// against each surface: the requests its `client.listJobs()` and `job.getLogs()` send (its
// CHANGELOG 0.5.0 and src/sdk/logs.test.ts), answered as its tests expect. The SDK releases that
// make these calls (0.2.0 and later) are not on the npm registry (it carries 0.1.x), so the
// requests are replayed here over real HTTP rather than sent by the package itself.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { openDirectory, type Directory } from "../../src/store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";
import { delayGraph } from "../fixtures/graphs.ts";
import { startTestServer, until, type TestServer } from "../hosted/hosted-server.ts";

/** One surface as an SDK user reaches it: its base URL (with any gateway mount) and key. */
interface Target {
  name: string;
  server: TestServer;
  base: string;
  key: string | null;
  /** The deployment listed jobs name; null off serverless. */
  deployment: string | null;
  /** Whether this caller is served logs (`urls.logs` present). */
  logs: boolean;
}

const printing = (text: string) => ({ "1": { class_type: "FlowgatePrint", inputs: { text } } });
const servers: TestServer[] = [];
const directories: Directory[] = [];
const targets: Target[] = [];

/** A key of a funded account, written into the server's directory as `flowgate keys create` does. */
async function fundedKey(server: TestServer): Promise<string> {
  const dir = await openDirectory(server.directory);
  directories.push(dir);
  await dir.ensureAccount("acme", { tier: "free", credits: 1000, now: Date.now() });
  const key = generateApiKey();
  await dir.addApiKey({ key_hash: hashApiKey(key), account: "acme", prefix: keyPrefix(key), created_at: Date.now(), revoked_at: null });
  return key;
}

beforeAll(async () => {
  const selfHosted = await startTestServer();
  const cloud = await startTestServer(["--surface", "cloud"]);
  const serverless = await startTestServer(["--surface", "serverless", "--serverless-domain", "example.test"]);
  servers.push(selfHosted, cloud, serverless);
  const cloudKey = await fundedKey(cloud);
  const serverlessKey = await fundedKey(serverless);
  const dir = directories[directories.length - 1]!;
  await dir.createDeployment({ id: "app", state: "ready", demo: false, created_at: Date.now() });
  await dir.createDeployment({ id: "demo", state: "ready", demo: true, created_at: Date.now() });
  targets.push(
    { name: "self-hosted", server: selfHosted, base: selfHosted.url, key: null, deployment: null, logs: false },
    { name: "cloud", server: cloud, base: cloud.url, key: cloudKey, deployment: null, logs: false },
    { name: "serverless", server: serverless, base: `${serverless.url}/deployment/app`, key: serverlessKey, deployment: "app", logs: true },
    { name: "serverless demo", server: serverless, base: `${serverless.url}/deployment/demo`, key: null, deployment: "demo", logs: false },
  );
});
afterAll(async () => {
  for (const d of directories) await d.close();
  for (const s of servers) await s.stop();
});

/** One exchange as the SDK sends it: a bearer key when it has one, JSON in and out. */
async function send(t: Target, method: string, url: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  const headers: Record<string, string> = {};
  if (t.key) headers.authorization = `Bearer ${t.key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

/** A host-relative link resolved against the request origin, as the SDK resolves it (URL-3). */
const follow = (t: Target, link: string) => new URL(link, t.server.url).href;

async function submitAndFinish(t: Target, workflow: object, metadata: Record<string, string>): Promise<any> {
  const created = await send(t, "POST", `${t.base}/api/v2/jobs`, { workflow, metadata });
  expect(created.status, created.text).toBe(201);
  return until(async () => {
    const r = await send(t, "GET", follow(t, created.body.urls.self));
    return ["succeeded", "failed"].includes(r.body.status) ? r.body : undefined;
  });
}

describe.each(["self-hosted", "cloud", "serverless", "serverless demo"])("the official SDK's calls on %s", (name) => {
  const target = () => targets.find((t) => t.name === name)!;

  it("listJobs: each item carries id, status, create_time, update_time, deployment_id and metadata; the walk follows next_cursor", async () => {
    const t = target();
    const run = `r${Math.random().toString(36).slice(2, 10)}`;
    const first = await submitAndFinish(t, printing("one"), { run });
    const second = await submitAndFinish(t, printing("two"), { run });
    // GET /api/v2/jobs?limit=1&metadata[run]=<run>, then ?cursor=<next_cursor> until it is null.
    const seen: any[] = [];
    const cursors = new Set<string>();
    let cursor: string | null = null;
    do {
      const q: string = `limit=1&metadata%5Brun%5D=${run}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await send(t, "GET", `${t.base}/api/v2/jobs?${q}`);
      expect(page.status, page.text).toBe(200);
      expect(v.response_listJobs_200(page.body), JSON.stringify(v.response_listJobs_200.errors)).toBe(true);
      seen.push(...page.body.jobs);
      cursor = page.body.next_cursor;
      // The SDK refuses a cursor it has already followed (a server paging in a loop).
      if (cursor) {
        expect(cursors.has(cursor)).toBe(false);
        cursors.add(cursor);
      }
    } while (cursor);
    expect(seen.map((j) => j.id)).toEqual([second.id, first.id]);
    for (const [item, job] of [
      [seen[0], second],
      [seen[1], first],
    ]) {
      expect(item.status).toBe("succeeded");
      expect(item.create_time).toBe(job.created_at);
      // Finished and listed after the end: the last change is the end.
      expect(item.update_time).toBe(job.completed_at);
      expect(item.deployment_id).toBe(t.deployment);
      expect(item.metadata).toEqual({ run });
      // flowgate's full job stays: the additive fields sit beside it.
      expect(item.created_at).toBe(job.created_at);
      expect(item.urls).toEqual(job.urls);
      expect(item).not.toHaveProperty("logs");
    }
  });

  it("a cursor the server did not issue is 400 invalid_cursor", async () => {
    const t = target();
    for (const bad of ["not-a-cursor", "AAAA", "eyJzZXEiOi0xfQ"]) {
      const r = await send(t, "GET", `${t.base}/api/v2/jobs?cursor=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(v.response_listJobs_400(r.body)).toBe(true);
      expect(r.body.error.code).toBe("invalid_cursor");
    }
  });

  it("getLogs follows urls.logs only where the surface serves logs: 200 with the log, 204 without one", async () => {
    const t = target();
    const job = await submitAndFinish(t, printing("hello from the SDK's run"), {});
    const logs = await send(t, "GET", `${t.base}/api/v2/jobs/${job.id}/logs`);
    if (!t.logs) {
      // No link: the SDK asks nothing. The resource is still served, and has nothing to show.
      expect(job.urls).not.toHaveProperty("logs");
      expect(logs.status).toBe(204);
      expect(logs.text).toBe("");
      expect(job).not.toHaveProperty("logs");
      return;
    }
    expect(job.urls.logs).toBe(`/deployment/${t.deployment}/api/v2/jobs/${job.id}/logs`);
    const linked = await send(t, "GET", follow(t, job.urls.logs));
    expect(linked.status).toBe(200);
    expect(v.response_getJobLogs_200(linked.body)).toBe(true);
    expect(linked.body.text).toContain("hello from the SDK's run");
    expect(linked.body).toMatchObject({ truncated: false, complete: true });
    expect(new Date(linked.body.captured_at).toISOString()).toBe(linked.body.captured_at);
    // The same log GET of the job embeds (LOG-2: one log, one lifetime).
    expect(linked.body).toEqual(job.logs);
    expect(logs.body).toEqual(linked.body);
  });

  it("getLogs of a job still running is 204 (re-read later), and of another caller's or a missing job 404", async () => {
    const t = target();
    const created = await send(t, "POST", `${t.base}/api/v2/jobs`, { workflow: delayGraph(30, "x") });
    expect(created.status).toBe(201);
    expect("logs" in created.body.urls).toBe(t.logs);
    await until(async () => ((await send(t, "GET", follow(t, created.body.urls.self))).body.status === "running" ? true : undefined));
    expect((await send(t, "GET", `${t.base}/api/v2/jobs/${created.body.id}/logs`)).status).toBe(204);
    await send(t, "POST", follow(t, created.body.urls.cancel));
    const missing = await send(t, "GET", `${t.base}/api/v2/jobs/0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42/logs`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
    if (t.deployment !== null) {
      // Another deployment of the same server does not see the job, nor its log.
      const other = t.deployment === "app" ? "demo" : "app";
      const r = await send(t, "GET", `${t.server.url}/deployment/${other}/api/v2/jobs/${created.body.id}/logs`);
      expect(r.status).toBe(t.key === null && other === "app" ? 401 : 404);
    }
  });
});

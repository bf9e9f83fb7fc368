// Fair slots between cloud accounts with the defaults (--concurrency 2, pro = 3 running jobs):
// one account's backlog never holds every slot. Asserted by start order, never by time: runs
// are long delays, and a slot is freed by cancelling a running job.
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateApiKey, hashApiKey, keyPrefix } from "../../src/surfaces/api-keys.ts";
import { startTestServer, until, type TestServer } from "../hosted/hosted-server.ts";
import { delayGraph } from "../fixtures/graphs.ts";

let server: TestServer;
const keys: Record<string, string> = {};

const slow = (tag: string) => delayGraph(120, tag);

async function call(account: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${keys[account]}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  expect(res.status).toBeLessThan(300);
  return res.json();
}

const submit = (account: string, tag: string) => call(account, "POST", "/api/v2/jobs", { workflow: slow(tag) });
const job = (account: string, id: string) => call(account, "GET", `/api/v2/jobs/${id}`);
const waitStatus = (account: string, id: string, status: string) =>
  until(async () => {
    const j = await job(account, id);
    return j.status === status ? j : undefined;
  });

/** Polls until the job's queue position is `n`: a start is visible in the store a moment before the queue lets the job go. */
const expectPosition = (account: string, id: string, n: number) =>
  until(async () => ((await job(account, id)).queue_position === n ? true : undefined)).catch(async () => {
    expect((await job(account, id)).queue_position).toBe(n);
  });

beforeAll(async () => {
  server = await startTestServer(["--surface", "cloud"]);
  const dir = server.runtime.directory!;
  for (const account of ["acme", "globex"]) {
    await dir.ensureAccount(account, { tier: "pro", credits: 1000, now: Date.now() });
    keys[account] = generateApiKey();
    await dir.addApiKey({ key_hash: hashApiKey(keys[account]!), account, prefix: keyPrefix(keys[account]!), created_at: Date.now(), revoked_at: null });
  }
});
afterAll(async () => {
  await server?.stop();
});

it("GEN-8: a freed slot goes to the account running fewer jobs, and positions say so", async () => {
  const a = [];
  for (let i = 0; i < 6; i++) a.push((await submit("acme", `a${i}`)).id as string);
  await waitStatus("acme", a[0]!, "running");
  await waitStatus("acme", a[1]!, "running");
  const b = (await submit("globex", "b0")).id as string;
  // acme runs two (its tier allows three, the server two): globex's job is next.
  await expectPosition("globex", b, 0);
  await expectPosition("acme", a[2]!, 1);
  await expectPosition("acme", a[5]!, 4);

  // A slot frees only when the canceled run has ended, so every start below follows one.
  await call("acme", "POST", `/api/v2/jobs/${a[0]}/cancel`);
  await waitStatus("globex", b, "running");
  expect((await job("acme", a[2]!)).status).toBe("queued");
  await expectPosition("acme", a[2]!, 0);

  // Each account runs one: acme's waiting job is the older, so it goes first.
  const b1 = (await submit("globex", "b1")).id as string;
  await expectPosition("globex", b1, 1);
  await expectPosition("acme", a[3]!, 2);
  await call("acme", "POST", `/api/v2/jobs/${a[1]}/cancel`);
  await waitStatus("acme", a[2]!, "running");
  await expectPosition("globex", b1, 1); // a3: same running count, older

  // globex runs none once b0 ends: b1 starts before acme's older jobs.
  await call("globex", "POST", `/api/v2/jobs/${b}/cancel`);
  await waitStatus("globex", b1, "running");
  expect((await job("acme", a[3]!)).status).toBe("queued");

  for (const id of a.slice(2)) await call("acme", "POST", `/api/v2/jobs/${id}/cancel`);
  for (const id of [b1]) await call("globex", "POST", `/api/v2/jobs/${id}/cancel`);
});

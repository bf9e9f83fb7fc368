// The cloud profile over real HTTP: account keys, isolation, credits, tiers, subscriptions.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { openDirectory, type Directory } from "../../src/store/index.ts";
import { ROOT } from "../../generators/spec-files.ts";
import { ComfyClient } from "../hosted/comfy-client.ts";
import { startTestServer, until, type TestServer } from "../hosted/hosted-server.ts";
import { delayGraph } from "../fixtures/graphs.ts";

const run = promisify(execFile);
let server: TestServer;
let dir: Directory;
let keyA: string;
let keyB: string;

const slow = (seconds: number) => delayGraph(seconds, "x");

/** `flowgate keys create` as a user runs it: the key alone on standard output. */
async function createKey(account: string, credits: string): Promise<string> {
  const { stdout } = await run(process.execPath, [
    path.join(ROOT, "bin", "flowgate.js"),
    "keys",
    "create",
    "--account",
    account,
    "--credits",
    credits,
    "--data-dir",
    server.dataDir,
  ]);
  expect(stdout).toMatch(/^fg_\S+\n$/);
  return stdout.trim();
}

function api(key: string | null, p: string, init: RequestInit = {}): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", ...(init.headers as Record<string, string>) };
  if (key) headers.authorization = `Bearer ${key}`;
  return fetch(`${server.url}${p}`, { ...init, headers });
}

async function submit(key: string, workflow: object, idem?: string): Promise<Response> {
  return api(key, "/api/v2/jobs", { method: "POST", body: JSON.stringify({ workflow }), headers: idem ? { "idempotency-key": idem } : {} });
}

async function waitStatus(key: string, id: string, statuses: string[]): Promise<Record<string, any>> {
  return until(async () => {
    const job = (await (await api(key, `/api/v2/jobs/${id}`)).json()) as Record<string, any>;
    return statuses.includes(job.status) ? job : undefined;
  });
}

beforeAll(async () => {
  server = await startTestServer(["--surface", "cloud", "--concurrency", "4", "--tiers", "free=1,pro=2", "--credit-rate", "10"]);
  keyA = await createKey("acme", "100");
  keyB = await createKey("globex", "100");
  dir = await openDirectory(server.dataDir);
});
afterAll(async () => {
  await dir.close();
  await server.stop();
});

describe("cloud surface", () => {
  it("AUTH-1/AUTH-4: v2 needs an account key; a wrong or revoked one is 401", async () => {
    expect((await api(null, "/api/v2/jobs")).status).toBe(401);
    const wrong = await api("fg_nope", "/api/v2/jobs");
    expect(wrong.status).toBe(401);
    expect(v.schema_ErrorEnvelope(await wrong.json())).toBe(true);
    const extra = await createKey("acme", "0");
    expect((await api(extra, "/api/v2/jobs")).status).toBe(200);
    await run(process.execPath, [path.join(ROOT, "bin", "flowgate.js"), "keys", "revoke", extra, "--data-dir", server.dataDir]);
    expect((await api(extra, "/api/v2/jobs")).status).toBe(401);
  });

  it("GET-2/AST-2: another account's jobs and assets are 404, and its asset in a graph is missing_asset", async () => {
    const res = await submit(keyA, {
      "1": { class_type: "PrimitiveString", inputs: { value: "a" } },
      "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
    });
    expect(res.status).toBe(201);
    const job = (await res.json()) as Record<string, any>;
    expect((await api(keyB, `/api/v2/jobs/${job.id}`)).status).toBe(404);
    expect((await api(keyB, `/api/v2/jobs/${job.id}/cancel`, { method: "POST" })).status).toBe(404);
    const done = await waitStatus(keyA, job.id, ["succeeded"]);
    expect(done.logs).toBeUndefined(); // LOG-1: never on cloud
    const assetId = done.outputs[0].id;
    expect((await api(keyB, `/api/v2/assets/${assetId}`)).status).toBe(404);
    const refd = await submit(keyB, {
      "1": { class_type: "LoadImage", inputs: { image: { __type: "core/ASSET", info: { id: assetId } } } },
      "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
    });
    expect(refd.status).toBe(422);
    expect(((await refd.json()) as any).error.code).toBe("missing_asset");
  });

  it("AST-4: created_new and 201 are relative to the caller: another account's copy of the same bytes is never revealed", async () => {
    const bytes = new Uint8Array(randomBytes(2048));
    const put = async (key: string) => {
      const form = new FormData();
      form.append("file", new Blob([bytes]), "same.bin");
      const res = await fetch(`${server.url}/api/v2/assets`, { method: "POST", body: form, headers: { authorization: `Bearer ${key}` } });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const first = await put(keyA);
    expect(first.status).toBe(201);
    expect(first.body.created_new).toBe(true);
    // The same bytes from another account: new to that account, as if nobody held them.
    const other = await put(keyB);
    expect(other.status).toBe(201);
    expect(other.body.created_new).toBe(true);
    // The caller's own second copy is reuse.
    const again = await put(keyB);
    expect(again.status).toBe(200);
    expect(again.body.created_new).toBe(false);
  });

  it("SUB-10/IDEM-4: no credits is 402 and releases the key; credits are charged when a job ends", async () => {
    await dir.updateAccount("globex", { credits: 0 });
    const refused = await submit(keyB, slow(0), "retry-me");
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as any).error.code).toBe("insufficient_credits");
    await dir.updateAccount("globex", { credits: 50 });
    const ok = await submit(keyB, slow(0.2), "retry-me");
    expect(ok.status).toBe(201);
    const job = (await ok.json()) as Record<string, any>;
    const done = await waitStatus(keyB, job.id, ["succeeded"]);
    const charged = await until(async () => {
      const a = await dir.getAccount("globex");
      return a && a.credits < 50 ? a : undefined;
    });
    expect(50 - charged.credits).toBeCloseTo((done.metrics.execution_ms / 1000) * 10, 1);
  });

  it("GEN-8: the tier sets how many jobs of an account run at once; the rest queue", async () => {
    await dir.updateAccount("acme", { tier: "free", credits: 100 });
    const first = (await (await submit(keyA, slow(30))).json()) as Record<string, any>;
    const second = (await (await submit(keyA, slow(30))).json()) as Record<string, any>;
    await waitStatus(keyA, first.id, ["running"]);
    // Another account is not held back by acme's tier.
    const other = (await (await submit(keyB, slow(30))).json()) as Record<string, any>;
    await waitStatus(keyB, other.id, ["running"]);
    const waiting = (await (await api(keyA, `/api/v2/jobs/${second.id}`)).json()) as Record<string, any>;
    expect(waiting.status).toBe("queued");
    expect(typeof waiting.queue_position).toBe("number");
    await api(keyA, `/api/v2/jobs/${first.id}/cancel`, { method: "POST" });
    await waitStatus(keyA, second.id, ["running"]);
    for (const [k, id] of [
      [keyA, second.id],
      [keyB, other.id],
    ] as const)
      await api(k, `/api/v2/jobs/${id}/cancel`, { method: "POST" });
  });

  it("GEN-8: however many jobs an account has waiting, another account's job starts on a free slot", async () => {
    await dir.updateAccount("acme", { tier: "free", credits: 100 });
    const first = (await (await submit(keyA, slow(30))).json()) as Record<string, any>;
    await waitStatus(keyA, first.id, ["running"]);
    // More of acme's jobs waiting than the dispatcher used to look past, all behind acme's one slot.
    for (let i = 0; i < 1100; i += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, () => submit(keyA, slow(30))));
      expect(batch.map((r) => r.status)).toEqual(batch.map(() => 201));
    }
    const other = (await (await submit(keyB, slow(30))).json()) as Record<string, any>;
    // Fair order: acme already runs a job, so globex's job comes first however many acme has waiting.
    expect(other.queue_position).toBe(0);
    await waitStatus(keyB, other.id, ["running"]);
    // Clean up for the tests after: every acme job waiting, then the two running.
    expect(
      (
        await fetch(`${server.url}/api/queue`, {
          method: "POST",
          headers: { "X-API-Key": keyA, "content-type": "application/json" },
          body: JSON.stringify({ clear: true }),
        })
      ).status,
    ).toBe(200);
    for (const [k, id] of [
      [keyA, first.id],
      [keyB, other.id],
    ] as const)
      await api(k, `/api/v2/jobs/${id}/cancel`, { method: "POST" });
    await waitStatus(keyA, first.id, ["canceled"]);
  });

  it("GEN-8/HOST-9: an inactive subscription is 403 on v2 and 429 on the hosted interface", async () => {
    await dir.updateAccount("globex", { subscription_active: false });
    const v2 = await api(keyB, "/api/v2/jobs");
    expect(v2.status).toBe(403);
    expect(((await v2.json()) as any).error.code).toBe("forbidden");
    const inactive = await fetch(`${server.url}/api/queue`, { headers: { "X-API-Key": keyB } });
    expect(inactive.status).toBe(429);
    expect(inactive.headers.get("retry-after") ?? "").toMatch(/^\d+$/); // the spec declares it
    await expect(new ComfyClient(server.url, keyB).connect()).rejects.toThrow(/429/);
    await dir.updateAccount("globex", { subscription_active: true });
    expect((await api(keyB, "/api/v2/jobs")).status).toBe(200);
  });

  it("AUTH-5: each account's sockets see only its own jobs", async () => {
    // The jobs of the tests before were charged by their run time, which a busy machine stretches.
    await dir.updateAccount("acme", { credits: 100 });
    const a = new ComfyClient(server.url, keyA);
    const b = new ComfyClient(server.url, keyB);
    await a.connect();
    await b.connect();
    const res = await a.queuePrompt({
      "1": { class_type: "PrimitiveString", inputs: { value: "only-a" } },
      "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
    });
    const body = (await res.json()) as { prompt_id: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    await a.waitForEnd(body.prompt_id);
    expect(b.messages.some((m) => m.data?.prompt_id === body.prompt_id)).toBe(false);
    a.close();
    b.close();
  });
});

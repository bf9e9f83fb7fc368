// Self-hosted authentication: open by default; with --token, every v2 route answers 401
// `unauthorized` to a missing or wrong bearer, before anything else about the request is looked
// at. Signed content links carry their own authorization.
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../../generated/routes.ts";
import { Api, expectError, expectValid, imageGraph, startTestServer, upload, v, type TestServer } from "./helpers.ts";

const TOKEN = "s3cret-token-for-tests";
let s: TestServer;
let authed: Api;
beforeAll(async () => {
  s = await startTestServer({ flags: ["--token", TOKEN], config: { bodyLimit: 64 * 1024 } });
  authed = new Api(s.url, TOKEN);
});
afterAll(async () => {
  await s?.stop();
});

const v2Routes = routes.filter((r) => r.family === "v2");
const HASH = `blake3:${"ab".repeat(32)}`;

function concrete(path: string): string {
  return path.replace("{id}", randomUUID()).replace("{hash}", HASH);
}

function bodyFor(operationId: string): string | undefined {
  if (operationId === "createJob") return JSON.stringify({ workflow: imageGraph() });
  if (operationId === "createAssetFromHash") return JSON.stringify({ hash: HASH });
  if (operationId === "cancelJob") return "{}";
  return undefined;
}

describe("with a static token", () => {
  it("covers every v2 operation of the spec", () => {
    expect(v2Routes.map((r) => r.operationId).sort()).toEqual(
      [
        "cancelJob",
        "checkAssetHash",
        "createAssetFromHash",
        "createJob",
        "deleteAsset",
        "getAsset",
        "getAssetContent",
        "getJob",
        "getJobLogs",
        "getJobWorkflow",
        "listJobs",
        "streamJobEvents",
        "uploadAsset",
      ].sort(),
    );
  });

  const cases = v2Routes.flatMap((r) =>
    (
      [
        ["no Authorization", {}],
        ["a wrong bearer", { authorization: "Bearer wrong-token" }],
        ["the token with another scheme", { authorization: `Basic ${TOKEN}` }],
        ["an empty bearer", { authorization: "Bearer " }],
        ["the token with a suffix", { authorization: `Bearer ${TOKEN}x` }],
      ] as const
    ).map(([what, headers]) => [`${r.method} ${r.path}`, what, r, headers] as const),
  );

  it.each(cases)("AUTH-2 AUTH-4 %s with %s is 401 unauthorized", async (_name, _what, route, headers) => {
    const body = bodyFor(route.operationId);
    const res = await s.api.request(route.method, concrete(route.path), {
      body,
      headers: { ...headers, ...(body ? { "content-type": "application/json" } : {}) },
    });
    expect(res.status, res.text).toBe(401);
    if (route.method === "HEAD") return expect(res.text).toBe("");
    const validator = (v as Record<string, any>)[`response_${route.operationId}_401`];
    expectError(res, 401, "unauthorized", validator);
    expect(res.headers.get("www-authenticate") ?? "Bearer").toMatch(/^Bearer/);
  });

  it("AUTH-1 the right bearer is accepted on every operation", async () => {
    const job = await authed.submit(imageGraph());
    const done = await authed.waitTerminal(job.id);
    expect(done.status).toBe("succeeded");
    expect((await authed.get("/api/v2/jobs")).status).toBe(200);
    expect((await authed.get(`/api/v2/jobs/${job.id}/workflow`)).status).toBe(200);
    expect((await authed.get(`/api/v2/jobs/${job.id}/logs`)).status).toBe(204); // self-hosted serves no logs
    expect((await authed.post(`/api/v2/jobs/${job.id}/cancel`)).status).toBe(200);
    const up = await upload(authed, [{ name: "file", file: randomBytes(32) }]);
    expect(up.status).toBe(201);
    expect((await authed.get(`/api/v2/assets/${up.body.id}`)).status).toBe(200);
    expect((await authed.get(`/api/v2/assets/${up.body.id}/content`)).status).toBe(302); // to the signed link
    expect((await authed.request("HEAD", `/api/v2/assets/by-hash/${up.body.hash}`)).status).toBe(200);
    expect((await authed.post("/api/v2/assets/from-hash", { hash: up.body.hash, file_path: "p" })).status).toBe(201);
    expect((await authed.request("DELETE", `/api/v2/assets/${up.body.id}`)).status).toBe(204);
    // The scheme name is case-insensitive.
    expect((await s.api.get("/api/v2/jobs", { headers: { authorization: `bearer ${TOKEN}` } })).status).toBe(200);
  });

  it("AUTH-4 credentials are checked before the body: a bad body without a token is still 401", async () => {
    const cases: Array<{ body: string; type: string }> = [
      { body: "{not json", type: "application/json" },
      { body: "plain", type: "text/plain" },
      { body: JSON.stringify({ workflow: imageGraph(), pad: "x".repeat(100 * 1024) }), type: "application/json" },
    ];
    for (const c of cases) {
      const res = await s.api.request("POST", "/api/v2/jobs", { body: c.body, headers: { "content-type": c.type } });
      expectError(res, 401, "unauthorized", v.response_createJob_401);
    }
    const bad = await s.api.get(`/api/v2/jobs?limit=0`);
    expectError(bad, 401, "unauthorized", v.response_listJobs_401);
    const up = await upload(s.api, [{ name: "file", file: randomBytes(16) }]);
    expectError(up, 401, "unauthorized", v.response_uploadAsset_401);
  });

  it("signed links need no bearer; a tampered one is 403, not 401", async () => {
    const up = await upload(authed, [{ name: "file", file: randomBytes(64) }]);
    const ok = await fetch(up.body.url);
    expect(ok.status).toBe(200);
    const url = new URL(up.body.url);
    url.searchParams.set("signature", "A".repeat(43));
    const res = await fetch(url);
    expect(res.status).toBe(403);
    const body = await res.json();
    expectValid(v.response_getAssetContent_403, body);
    expect(body.error.code).toBe("forbidden");
  });

  it("the probes stay open; the token never appears in an answer", async () => {
    expect((await s.api.get("/healthz")).status).toBe(200);
    expect((await s.api.get("/readyz")).status).toBe(200);
    for (const text of s.api.seen.concat(authed.seen)) expect(text).not.toContain(TOKEN);
  });
});

describe("without a token", () => {
  it("AUTH-2 AUTH-3 every v2 operation is open, and a bearer sent anyway is ignored", async () => {
    const open = await startTestServer();
    try {
      const job = await open.api.submit(imageGraph());
      expect((await open.api.get(`/api/v2/jobs/${job.id}`, { token: "anything" })).status).toBe(200);
      expect((await open.api.get("/api/v2/jobs")).status).toBe(200);
    } finally {
      await open.stop();
    }
  });
});

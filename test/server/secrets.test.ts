// SUB-11: a partner key sent in extra_data reaches the worker for that run (the vendor gets it)
// and is written nowhere: no file under the data dir (database, WAL and blobs included), no log
// line of the real CLI, no response, no event.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, filesContaining, imageGraph, listFiles, spawnCli, SseClient, unique, type CliServer } from "./helpers.ts";

const KEY = `sk-flowgate-partner-${randomBytes(12).toString("hex")}`;
const TOKEN = `tok-${randomBytes(12).toString("hex")}`;
const SIGNING_KEY = `sig-${randomBytes(16).toString("hex")}`;

let vendor: http.Server;
let vendorUrl = "";
const vendorSaw: string[] = [];
let cli: CliServer;
let dataDir = "";
let api: Api;

beforeAll(async () => {
  // The partner vendor: answers by the prompt, and records the credential it was sent.
  vendor = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      vendorSaw.push(String(req.headers.authorization ?? ""));
      const prompt = (JSON.parse(body) as { prompt: string }).prompt;
      if (prompt.startsWith("fail500")) return void res.writeHead(500).end(`internal error for key ${KEY}`);
      if (prompt.startsWith("fail401")) return void res.writeHead(401).end(`bad key ${KEY}`);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: `vendor answer to ${prompt}` }));
    });
  });
  await new Promise<void>((r) => vendor.listen(0, "127.0.0.1", r));
  vendorUrl = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}/v1/generate`;
  dataDir = await mkdtemp(join(tmpdir(), "flowgate-secrets-"));
  cli = await spawnCli([
    "--data-dir",
    dataDir,
    "--port",
    "0",
    "--token",
    TOKEN,
    "--signing-key",
    SIGNING_KEY,
    "--partner-url",
    vendorUrl,
    "--log-level",
    "debug",
  ]);
  api = new Api(cli.url, TOKEN);
});

afterAll(async () => {
  if (cli && cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill("SIGKILL");
  await new Promise<void>((r) => (vendor ? vendor.close(() => r()) : r()));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const partnerGraph = (prompt: string) => ({
  "1": { class_type: "FlowgatePartnerCall", inputs: { prompt } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
});

describe("extra_data is forwarded and never kept", () => {
  it("SUB-11 GEN-9 AUTH-6 the key reaches the vendor and appears in no file, log line, response or event", async () => {
    // Every way a submission can carry it: accepted, idempotent retry, rejected for other reasons.
    const ok = await api.submit(partnerGraph(unique("hello")), { extra_data: { api_key_vendor_org: KEY }, key: "idem-1" });
    const stream = new SseClient(`${cli.url}${ok.urls.events}`, TOKEN);
    const done = await api.waitTerminal(ok.id);
    await stream.done;
    expect(done.status, JSON.stringify(done.error)).toBe("succeeded");
    expect(vendorSaw).toContain(`Bearer ${KEY}`);
    const text = await fetch(done.outputs[0].url).then((r) => r.text());
    expect(text).toContain("vendor answer to hello");

    for (const prompt of ["fail500", "fail401"]) {
      const failing = await api.submit(partnerGraph(unique(prompt)), { extra_data: { api_key_vendor_org: KEY } });
      const end = await api.waitTerminal(failing.id);
      expect(end.status).toBe("failed");
      expect(end.error.code).toBe("partner_node_error");
    }
    const reuse = await api.post(
      "/api/v2/jobs",
      { workflow: partnerGraph("again"), extra_data: { api_key_vendor_org: KEY } },
      { headers: { "idempotency-key": "idem-1" } },
    );
    expect(reuse.status).toBe(422);
    const invalid = await api.post("/api/v2/jobs", { workflow: { "1": { class_type: "Nope", inputs: {} } }, extra_data: { api_key_vendor_org: KEY } });
    expect(invalid.status).toBe(422);
    const wrongKey = await api.post("/api/v2/jobs", { workflow: imageGraph(), extra_data: { api_key_vendor_org: KEY, other: KEY } });
    expect(wrongKey.status).toBe(400);
    const reserved = await api.post("/api/v2/jobs", { workflow: imageGraph(), webhook_url: KEY, extra_data: { api_key_vendor_org: KEY } });
    expect(reserved.status).toBe(400);
    const unauthorized = await api.post("/api/v2/jobs", { workflow: imageGraph(), extra_data: { api_key_vendor_org: KEY } }, { token: "wrong" });
    expect(unauthorized.status).toBe(401);
    const notJson = await api.request("POST", "/api/v2/jobs", {
      body: `{"workflow": {}, "extra_data": {"api_key_vendor_org": "${KEY}"`,
      headers: { "content-type": "application/json" },
    });
    expect(notJson.status).toBe(400);

    // Reads of everything there is.
    await api.get("/api/v2/jobs?limit=100");
    for (const j of (await api.get("/api/v2/jobs?limit=100")).body.jobs) {
      await api.get(`/api/v2/jobs/${j.id}`);
      await api.get(`/api/v2/jobs/${j.id}/workflow`);
    }

    // Responses and events.
    for (const body of api.seen) expect(body).not.toContain(KEY);
    expect(stream.raw).not.toContain(KEY);
    expect(stream.raw.length).toBeGreaterThan(0);

    // Files while the server runs (the WAL holds the recent writes). An output's blob file is
    // named with its batch, a moment after its job's end (its bytes are in the WAL meanwhile).
    const hasBlob = (list: string[]) => list.some((f) => f.includes(`${join("blobs", "")}`));
    for (let i = 0; i < 200 && !hasBlob(await listFiles(dataDir)); i++) await new Promise((r) => setTimeout(r, 10));
    const files = await listFiles(dataDir);
    expect(files.some((f) => f.endsWith("-wal"))).toBe(true);
    expect(hasBlob(files)).toBe(true);
    expect(await filesContaining(dataDir, KEY)).toEqual([]);
    // The scan can see: the workflow text is in those files.
    expect((await filesContaining(dataDir, "vendor answer to hello")).length).toBeGreaterThan(0);

    // A clean stop, then the files and everything the process printed.
    cli.child.kill("SIGTERM");
    expect(await cli.exited).toBe(0);
    expect(await filesContaining(dataDir, KEY)).toEqual([]);
    const output = cli.output();
    expect(output).toContain('"msg"'); // the JSON request log was captured
    expect(output).not.toContain(KEY);
    expect(output).not.toContain(TOKEN);
    expect(output).not.toContain(SIGNING_KEY);
  });

  it("the start-up banner prints the settings and the URL, never a secret", () => {
    const output = cli.output();
    expect(output).toMatch(/flowgate: .*surface=self-hosted/);
    expect(output).toContain("token=(set)");
    expect(output).toContain("signingKey=(set)");
    expect(output).toContain("concurrency=2");
    expect(output).toContain(`listening on ${cli.url}`);
    expect(output).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
  });
});

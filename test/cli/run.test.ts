// `flowgate run` end to end with plain output: inputs uploaded and referenced, outputs
// downloaded and verified, --json, previews, failures with the job's error, usage errors.
import { readdir, readFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blake3Hex } from "../../src/domain/blake3.ts";
import { FlowgateClient } from "../../src/index.ts";
import { failingGraph, samplerGraph, startTestServer, type TestServer } from "../client/fixtures.ts";
import { ROOT, runCli } from "./cli.ts";

let server: TestServer;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer();
  dir = await mkdtemp(join(tmpdir(), "flowgate-cli-"));
  env = { FLOWGATE_BASE_URL: server.url };
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function graphFile(name: string, graph: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify(graph));
  return path;
}

describe("flowgate run (plain output)", () => {
  it("uploads --input by node title, runs the image pipeline example and downloads its output", async () => {
    const out = join(dir, "pipeline");
    const r = await runCli(["run", "examples/image-pipeline.json", "--input", "image=examples/inputs/gradient.png", "--out", out], env);
    expect(r.code, r.stderr).toBe(0);
    const files = r.stdout.trim().split("\n");
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/pipeline_\d+_\.png$/);
    const meta = await sharp(await readFile(files[0]!)).metadata();
    expect([meta.format, meta.width]).toEqual(["png", 256]);
    expect(r.stderr).toMatch(/input image -> node 1\.image: examples\/inputs\/gradient\.png \((uploaded|already on the server)/);
    expect(r.stderr).toMatch(/^\[\d+:\d\d\] running \d+%/m);
    expect(r.stderr).toMatch(/^\[\d+:\d\d\] succeeded 100%$/m);
    expect(r.stderr).not.toMatch(/\r|\x1b\[/);
    // The graph sent referenced the uploaded asset, not a file name.
    const id = /job (\S+) succeeded/.exec(r.stderr)![1]!;
    const workflow = (await (await fetch(`${server.url}/api/v2/jobs/${id}/workflow`)).json()) as { workflow: Record<string, any> };
    expect(workflow.workflow["1"].inputs.image.__type).toBe("core/ASSET");
  });

  it("sends integers beyond 2^53 as written in the graph file", async () => {
    const path = join(dir, "big-seed.json");
    await writeFile(
      path,
      `{"1":{"class_type":"FlowgateSampler","inputs":{"seed":18446744073709551615,"steps":1,"width":16,"height":16}},"2":{"class_type":"PreviewImage","inputs":{"images":["1",0]}}}`,
    );
    const r = await runCli(["run", path, "--no-download", "--progress", "none"], env);
    expect(r.code, r.stderr).toBe(0);
    const id = /job (\S+) succeeded/.exec(r.stderr)![1]!;
    expect(await (await fetch(`${server.url}/api/v2/jobs/${id}/workflow`)).text()).toContain(`"seed":18446744073709551615`);
  });

  it("NODE_ID.INPUT addresses an input directly", async () => {
    const r = await runCli(
      ["run", "examples/image-pipeline.json", "--input", "1.image=examples/inputs/gradient.png", "--out", join(dir, "byid"), "--progress", "none"],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/\[\d+:\d\d\]/);
  });

  it("--json prints the job and the verified files as one JSON object", async () => {
    const r = await runCli(["run", "examples/audio.json", "--out", join(dir, "audio"), "--json"], env);
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as {
      job: { status: string; outputs: Array<{ hash: string; type: string }> };
      files: Array<{ path: string; hash: string }>;
    };
    expect(result.job.status).toBe("succeeded");
    expect(result.job.outputs[0]!.type).toBe("audio");
    expect(result.files[0]!.hash).toBe(result.job.outputs[0]!.hash);
    expect(`blake3:${await blake3Hex(await readFile(result.files[0]!.path))}`).toBe(result.job.outputs[0]!.hash);
  });

  it("--previews writes the sampler's live previews as JPEG files", async () => {
    const out = join(dir, "previews");
    const r = await runCli(["run", await graphFile("sampler.json", samplerGraph(600, 32)), "--out", out, "--previews", "--json"], env);
    expect(r.code, r.stderr).toBe(0);
    const previews = await readdir(join(out, "previews"));
    expect(previews.length).toBeGreaterThan(0);
    expect(JSON.parse(r.stdout).previews).toHaveLength(previews.length);
    const first = await readFile(join(out, "previews", previews.sort()[0]!));
    expect(first.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
  });

  it("exits 1 with the job's error when the job fails", async () => {
    const r = await runCli(["run", await graphFile("failing.json", failingGraph()), "--out", join(dir, "failing")], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/job \S+ failed/);
    expect(r.stderr).toContain("partner_node_error");
    expect(r.stderr).toContain("node 1 FlowgatePartnerCall");
    // The engine's stack stays out of the message; the line says where it is.
    expect(r.stderr).not.toMatch(/\n\s+at /);
    const id = /job (\S+) failed/.exec(r.stderr)![1]!;
    expect(r.stderr).toMatch(new RegExp(`the traceback: (npx )?flowgate status ${id}`));
    expect((await runCli(["status", id], env)).stdout).toMatch(/\n\s+at /);
  });

  it("exits 1 with per-node details when the server rejects the workflow", async () => {
    const r = await runCli(["run", await graphFile("invalid.json", { "1": { class_type: "NoSuchNode", inputs: {} } })], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("invalid_workflow (HTTP 422)");
    expect(r.stderr).toMatch(/node 1: class_type unknown_class/);
  });

  it("exits 2 on usage errors, naming the problem", async () => {
    const noGraph = await runCli(["run"], env);
    expect(noGraph.code).toBe(2);
    expect(noGraph.stderr).toContain("expected one graph file");
    const badName = await runCli(["run", "examples/image-pipeline.json", "--input", "nosuch=examples/inputs/gradient.png"], env);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain(`"nosuch" is neither a node id, a node title, nor NODE.INPUT`);
    const badFlag = await runCli(["run", "examples/audio.json", "--bogus"], env);
    expect(badFlag.code).toBe(2);
  });

  it("reads the server from --base-url over FLOWGATE_BASE_URL", async () => {
    const r = await runCli(["run", "examples/audio.json", "--no-download", "--base-url", server.url], { FLOWGATE_BASE_URL: "http://127.0.0.1:9" });
    expect(r.code, r.stderr).toBe(0);
    const wrong = await runCli(["run", "examples/audio.json", "--no-download"], { FLOWGATE_BASE_URL: "http://127.0.0.1:9" });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("no flowgate server answers at http://127.0.0.1:9");
  });
});

describe("flowgate run, the partner example", () => {
  it("forwards --partner-key as extra_data.api_key_vendor_org", async () => {
    const http = await import("node:http");
    const seen: string[] = [];
    const vendor = http.createServer((req, res) => {
      seen.push(String(req.headers.authorization));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: "a haiku" }));
    });
    await new Promise<void>((r) => vendor.listen(0, "127.0.0.1", r));
    const partnerServer = await startTestServer(["--partner-url", `http://127.0.0.1:${(vendor.address() as { port: number }).port}/`]);
    try {
      const out = join(dir, "partner");
      const r = await runCli(["run", "examples/partner-call.json", "--out", out, "--partner-key", "vendor-key"], { FLOWGATE_BASE_URL: partnerServer.url });
      expect(r.code, r.stderr).toBe(0);
      expect(seen).toEqual(["Bearer vendor-key"]);
      expect(await readFile(r.stdout.trim(), "utf8")).toBe("a haiku");
    } finally {
      await partnerServer.stop();
      vendor.close();
    }
  });
});

describe("examples", () => {
  it("every example graph is accepted by the server's validation", async () => {
    const client = new FlowgateClient({ baseUrl: server.url });
    for (const name of (await readdir(join(ROOT, "examples"))).filter((n) => n.endsWith(".json"))) {
      const graph = JSON.parse(await readFile(join(ROOT, "examples", name), "utf8"));
      if (name === "image-pipeline.json")
        graph["1"].inputs.image = (await import("../../src/index.ts")).assetReference(
          (await client.uploadAsset(join(ROOT, "examples/inputs/gradient.png"))).asset,
        );
      const job = await client.submit(graph);
      await client.cancel(job);
    }
  });
});

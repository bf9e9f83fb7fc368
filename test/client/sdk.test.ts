// The generated SDK, a public entry of the package (`sdk` from "flowgate"): every operation of
// the spec called once against a running server with a key, the event stream included.
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routes } from "../../generated/routes.ts";
import { sdk } from "../../src/index.ts";
import { delayGraph, startTestServer, type TestServer } from "./fixtures.ts";

const KEY = "sdk-key-0123456789";
let server: TestServer;
let client: sdk.Client;
const called = new Set<string>();

/** Calls one SDK operation and notes it, so the last test can prove every one was called. */
async function call<R>(name: keyof typeof sdk, run: () => Promise<R>): Promise<R> {
  called.add(name);
  return run();
}

beforeAll(async () => {
  server = await startTestServer(["--token", KEY]);
  // The key for every scheme but `signedUrl`: a signature is the link's own, never the key.
  client = sdk.createClient({ baseUrl: server.url, auth: (scheme) => (scheme.name === "signature" ? undefined : KEY) });
});
afterAll(async () => server?.stop());

const graph = (color: number) => ({
  "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color } },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "sdk" } },
});

describe("the generated SDK against a running server", () => {
  it("v2 jobs: submit, stream the events to the end, read, list, read the workflow and the log, cancel", async () => {
    const created = await call("createJob", () =>
      sdk.createJob({ client, body: { workflow: graph(0xff0000) }, headers: { "Idempotency-Key": crypto.randomUUID() } }),
    );
    expect(created.response?.status).toBe(201);
    const id = created.data!.id;

    const { stream } = await call("streamJobEvents", () => sdk.streamJobEvents({ client, path: { id }, sseMaxRetryAttempts: 1 }));
    const statuses: string[] = [];
    for await (const event of stream) {
      const status = (event as { status?: string }).status;
      if (typeof status === "string") statuses.push(status);
      if (status === "succeeded" || status === "failed") break;
    }
    expect(statuses.at(-1)).toBe("succeeded");

    const read = await call("getJob", () => sdk.getJob({ client, path: { id } }));
    expect(read.data?.status).toBe("succeeded");
    expect(read.data?.outputs.length).toBe(1);
    const list = await call("listJobs", () => sdk.listJobs({ client, query: { limit: 5 } }));
    expect(list.data?.jobs.some((j) => j.id === id)).toBe(true);
    const workflow = await call("getJobWorkflow", () => sdk.getJobWorkflow({ client, path: { id } }));
    expect(workflow.data?.workflow).toEqual(graph(0xff0000));
    // Self-hosted captures no log: the resource answers 204, with no data.
    const logs = await call("getJobLogs", () => sdk.getJobLogs({ client, path: { id } }));
    expect(logs.response?.status).toBe(204);

    const slow = await sdk.createJob({ client, body: { workflow: delayGraph(30) } });
    const canceled = await call("cancelJob", () => sdk.cancelJob({ client, path: { id: slow.data!.id }, body: {} }));
    expect(canceled.response?.status).toBe(200);
    expect(["canceling", "canceled"]).toContain(canceled.data?.status);
  });

  it("v2 assets: upload, check the hash, from-hash, read, download through the redirect, delete", async () => {
    const bytes = new TextEncoder().encode("bytes uploaded through the generated SDK");
    // The description comes before the file, which the server hashes as it streams in.
    const up = await call("uploadAsset", () => sdk.uploadAsset({ client, body: { file_path: "sdk.txt", file: new Blob([bytes]) } }));
    expect(up.response?.status).toBe(201);
    expect(up.data?.created_new).toBe(true);
    const asset = up.data!;
    const head = await call("checkAssetHash", () => sdk.checkAssetHash({ client, path: { hash: asset.hash! } }));
    expect(head.response?.status).toBe(200);
    const again = await call("createAssetFromHash", () => sdk.createAssetFromHash({ client, body: { hash: asset.hash!, file_path: "again.txt" } }));
    expect(again.data?.created_new).toBe(false);
    const read = await call("getAsset", () => sdk.getAsset({ client, path: { id: asset.id } }));
    expect(read.data?.expires_at).toBeTruthy();
    // The content answers 302 to the signed link; fetch follows it.
    const content = await call("getAssetContent", () => sdk.getAssetContent({ client, path: { id: asset.id }, parseAs: "text" }));
    expect(content.response?.status).toBe(200);
    expect(content.data).toBe(new TextDecoder().decode(bytes));
    const gone = await call("deleteAsset", () => sdk.deleteAsset({ client, path: { id: again.data!.id } }));
    expect(gone.response?.status).toBe(204);
  });

  it("the hosted interface: upload, queue, status, history, view, queue management, node info, stats", async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 4, background: { r: 0, g: 0, b: 255, alpha: 1 } } })
      .png()
      .toBuffer();
    const image = await call("hostedUploadImage", () => sdk.hostedUploadImage({ client, body: { image: new Blob([new Uint8Array(png)]) } }));
    expect(image.response?.status).toBe(200);
    const mask = await call("hostedUploadMask", () =>
      sdk.hostedUploadMask({
        client,
        body: { image: new Blob([new Uint8Array(png)]), original_ref: JSON.stringify({ filename: image.data!.name, subfolder: "", type: "input" }) },
      }),
    );
    expect(mask.response?.status).toBe(200);

    const queued = await call("hostedQueuePrompt", () => sdk.hostedQueuePrompt({ client, body: { prompt: graph(0x00ff00) } }));
    const promptId = queued.data!.prompt_id;
    let status = "";
    for (let i = 0; i < 300 && !["success", "error"].includes(status); i++) {
      status = (await call("hostedGetJobStatus", () => sdk.hostedGetJobStatus({ client, path: { prompt_id: promptId } }))).data?.status ?? "";
      if (status !== "success") await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe("success");
    const entry = await call("hostedGetHistoryEntry", () => sdk.hostedGetHistoryEntry({ client, path: { prompt_id: promptId } }));
    const file = Object.values(entry.data![promptId]!.outputs)[0]!.images![0]!;
    const history = await call("hostedGetHistory", () => sdk.hostedGetHistory({ client, query: { max_items: 10 } }));
    expect(Object.keys(history.data ?? {})).toContain(promptId);
    // ComfyUI's job API: the finished prompt listed and read in full, the server's feature flags.
    const jobs = await call("hostedListJobs", () => sdk.hostedListJobs({ client, query: { status: "completed", limit: "10" } }));
    expect(jobs.data?.jobs.map((j) => j.id)).toContain(promptId);
    const job = await call("hostedGetJob", () => sdk.hostedGetJob({ client, path: { job_id: promptId } }));
    expect(job.data?.status).toBe("completed");
    const features = await call("hostedGetFeatures", () => sdk.hostedGetFeatures({ client }));
    expect(features.response?.status).toBe(200);
    // Deleting it from history hides it there, as ComfyUI does; the job itself stays readable.
    expect((await call("hostedManageHistory", () => sdk.hostedManageHistory({ client, body: { delete: [promptId] } }))).response?.status).toBe(200);
    expect(Object.keys((await sdk.hostedGetHistory({ client, query: { max_items: 10 } })).data ?? {})).not.toContain(promptId);
    const view = await call("hostedView", () =>
      sdk.hostedView({ client, query: { filename: file.filename, type: file.type, subfolder: "" }, parseAs: "arrayBuffer" }),
    );
    expect(view.response?.status).toBe(200);
    expect(new Uint8Array(view.data as ArrayBuffer).subarray(0, 4)).toEqual(new Uint8Array([0x89, 0x50, 0x4e, 0x47]));

    const pending = (await sdk.hostedQueuePrompt({ client, body: { prompt: delayGraph(30) } })).data!.prompt_id;
    const queue = await call("hostedGetQueue", () => sdk.hostedGetQueue({ client }));
    expect([...queue.data!.queue_running, ...queue.data!.queue_pending].map((e) => e[1])).toContain(pending);
    expect((await call("hostedManageQueue", () => sdk.hostedManageQueue({ client, body: { delete: [pending] } }))).response?.status).toBe(200);
    // A finished prompt cancels as a no-op, one at a time and in a batch, as in ComfyUI.
    expect((await call("hostedCancelJob", () => sdk.hostedCancelJob({ client, path: { job_id: promptId } }))).data?.cancelled).toBe(false);
    expect((await call("hostedCancelJobs", () => sdk.hostedCancelJobs({ client, body: { job_ids: [promptId] } }))).data?.cancelled).toBe(false);
    expect((await call("hostedInterrupt", () => sdk.hostedInterrupt({ client, body: {} }))).response?.status).toBe(200);
    const info = await call("hostedGetPromptInfo", () => sdk.hostedGetPromptInfo({ client }));
    expect(info.data?.exec_info).toBeDefined();

    const all = await call("hostedGetObjectInfo", () => sdk.hostedGetObjectInfo({ client }));
    expect(all.data?.SaveImage).toBeDefined();
    const one = await call("hostedGetNodeInfo", () => sdk.hostedGetNodeInfo({ client, path: { node_class: "SaveImage" } }));
    expect(Object.keys(one.data ?? {})).toEqual(["SaveImage"]);
    const stats = await call("hostedGetSystemStats", () => sdk.hostedGetSystemStats({ client }));
    expect(stats.data?.devices.length).toBeGreaterThan(0);
    // Without an upgrade the socket route answers an error in ComfyUI's shape.
    const socket = await call("hostedWebSocket", () => sdk.hostedWebSocket({ client, query: { clientId: "sdk" } }));
    expect(socket.response?.status).toBe(400);
  });

  it("probes", async () => {
    expect((await call("getHealth", () => sdk.getHealth({ client }))).data?.status).toBe("ok");
    expect((await call("getReadiness", () => sdk.getReadiness({ client }))).response?.status).toBe(200);
    const metrics = await call("getMetrics", () => sdk.getMetrics({ client, parseAs: "text" }));
    expect(metrics.response?.status).toBe(200);
    expect(String(metrics.data)).toContain("# TYPE flowgate_");
  });

  it("every operation of the spec was called above", () => {
    expect([...called].sort()).toEqual(routes.map((r) => r.operationId).sort());
  });
});

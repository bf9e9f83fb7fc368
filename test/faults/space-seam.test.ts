// Out-of-space failures through a seam over the running server's blob store and store (no root
// needed): what does not fit fails with `insufficient_storage` and leaves nothing behind, and
// since the real disk has room, the server lifts the short state and resumes by itself.
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { blobFiles, expectError, imageGraph, startTestServer, upload, waitFor, type TestServer } from "../server/helpers.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const enospc = () => Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", errno: -28 });
const sqliteFull = () => Object.assign(new Error("database or disk is full"), { code: "ERR_SQLITE_ERROR", errcode: 13 });

/** Submits until the server takes the job (it may still be short of space for a moment). */
async function submitWhenRoom(s: TestServer, workflow: Record<string, unknown>): Promise<any> {
  const res = await waitFor(
    () => s.api.post("/api/v2/jobs", { workflow }),
    (r) => r.status !== 507,
    "room for a submission",
  );
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe("out of space, through a seam", () => {
  it("an output whose blob cannot be written fails its job with insufficient_storage; the queue goes on", async () => {
    server = await startTestServer({ flags: ["--concurrency", "1"] });
    const blobs = server.runtime.blobs;
    const put = blobs.put.bind(blobs);
    const stage = blobs.stage.bind(blobs);
    let full = true;
    // Both ways bytes are written: put, and stage (the last output node's small outputs).
    blobs.put = (source, options) => (full ? Promise.reject(enospc()) : put(source, options));
    blobs.stage = (bytes) => (full ? Promise.reject(enospc()) : stage(bytes));
    const job = await server.api.submit(imageGraph("no-room"));
    const failed = await server.api.waitTerminal(job.id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({ code: "insufficient_storage", node_id: "2", class_type: "SaveImage" });
    expect(failed.outputs).toEqual([]);
    full = false;
    const next = await submitWhenRoom(server, imageGraph("room-again"));
    expect((await server.api.waitTerminal(next.id)).status).toBe("succeeded");
  });

  it("an upload whose record cannot be written answers 507 and removes the blob it wrote", async () => {
    server = await startTestServer();
    const store = server.runtime.store;
    const addAsset = store.addAsset.bind(store);
    store.addAsset = () => Promise.reject(sqliteFull());
    expectError(await upload(server.api, [{ name: "file", file: randomBytes(4096) }]), 507, "insufficient_storage");
    expect(await blobFiles(server.dataDir)).toEqual([]);
    store.addAsset = addAsset;
    await waitFor(
      () => server!.api.get("/readyz"),
      (r) => r.status === 200,
      "ready again",
    );
    expect((await upload(server.api, [{ name: "file", file: randomBytes(4096) }])).status).toBe(201);
  });

  it("a submission the store cannot record answers 507 on v2 and on the hosted interface", async () => {
    server = await startTestServer();
    const store = server.runtime.store;
    store.createJob = () => Promise.reject(sqliteFull());
    expectError(await server.api.post("/api/v2/jobs", { workflow: imageGraph("v2") }), 507, "insufficient_storage");
    const hosted = await fetch(`${server.url}/api/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: imageGraph("hosted") }),
    });
    expect(hosted.status).toBe(507);
    expect(((await hosted.json()) as any).error.type).toBe("insufficient_storage");
  });
});

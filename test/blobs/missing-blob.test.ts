// An asset whose record is there but whose bytes are not in the node's blob store (processes that
// do not share one --blob-dir or --blob-store, or a bucket restored older than the database):
// its download is 404 in the contract's envelope, as docs/production.md says, never a 500, and a
// lost text output leaves the hosted history readable.
import { randomBytes } from "node:crypto";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, upload, waitFor, type TestServer } from "../server/helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

it("a download whose blob is gone from the blob store is 404 not_found", async () => {
  const res = await upload(s.api, [{ name: "file", file: randomBytes(3000), filename: "a.bin" }]);
  expect(res.status, res.text).toBeLessThan(300);
  const { id, hash } = res.body as { id: string; hash: string };
  const blobs = join(s.dataDir, "blobs");
  const files = (await readdir(blobs, { recursive: true })).filter((name) => name.includes(hash.replace(/^blake3:/, "")));
  expect(files).toHaveLength(1);
  await rm(join(blobs, files[0]!));

  const download = await fetch(`${s.url}/api/v2/assets/${id}/content`);
  expect(download.status).toBe(404);
  expect(((await download.json()) as { error: { code: string; message: string } }).error).toEqual({
    code: "not_found",
    message: "The bytes of this asset are not in this server's blob store.",
  });
  const ranged = await fetch(`${s.url}/api/v2/assets/${id}/content`, { headers: { range: "bytes=0-9" } });
  expect(ranged.status).toBe(404);
  await ranged.body?.cancel();
});

it("a text output whose blob is gone leaves /api/history readable: the text is listed as a file, and its /view is 404", async () => {
  const prompt = {
    "1": { class_type: "PrimitiveString", inputs: { value: "kept in the record" } },
    "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
  };
  const queued = await s.api.request("POST", "/api/prompt", { json: { prompt } });
  expect(queued.status, queued.text).toBe(200);
  const id = (queued.body as { prompt_id: string }).prompt_id;
  const entry = async () =>
    (
      (await s.api.request("GET", `/api/history/${id}`)).body as Record<
        string,
        { status: { completed: boolean }; outputs: Record<string, Record<string, unknown[]>> }
      >
    )[id];
  const done = await waitFor(entry, (e) => e?.status.completed === true, "the prompt's history entry");
  expect(done!.outputs["2"]!.text).toEqual(["kept in the record"]);

  const job = await s.api.request("GET", `/api/v2/jobs/${id}`);
  const hash = (job.body as { outputs: Array<{ hash: string }> }).outputs[0]!.hash.replace(/^blake3:/, "");
  const blobs = join(s.dataDir, "blobs");
  // A small output's bytes reach the disk behind its record (write-behind): wait for them.
  const stored = await waitFor(
    async () => (await readdir(blobs, { recursive: true })).filter((name) => name.includes(hash)),
    (names) => names.length === 1,
    "the text's blob on disk",
  );
  await rm(join(blobs, stored[0]!));
  // Until its write-behind entry is let go, the blob store still serves the bytes from memory.
  const asset = (job.body as { outputs: Array<{ id: string }> }).outputs[0]!.id;
  await waitFor(
    async () => {
      const res = await fetch(`${s.url}/api/v2/assets/${asset}/content`);
      await res.body?.cancel();
      return res.status;
    },
    (status) => status === 404,
    "the blob store reading the text from disk",
  );

  const history = await s.api.request("GET", `/api/history/${id}`);
  expect(history.status, history.text).toBe(200);
  const files = (history.body as Record<string, { outputs: Record<string, Record<string, Array<{ filename: string; type: string }>>> }>)[id]!.outputs["2"]!;
  expect(files.text).toBeUndefined();
  const file = files.files![0]!;
  const view = await fetch(`${s.url}/api/view?filename=${encodeURIComponent(file.filename)}&type=${file.type}`);
  expect(view.status).toBe(404);
  await view.body?.cancel();
});

// An asset whose record is there but whose bytes are not in the node's blob store (processes that
// do not share one --blob-dir or --blob-store, or a bucket restored older than the database):
// its download is 404 in the contract's envelope, as docs/production.md says, never a 500.
import { randomBytes } from "node:crypto";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, upload, type TestServer } from "../server/helpers.ts";

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

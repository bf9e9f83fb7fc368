// A clean stop names the staged outputs (their files are otherwise written with their batch, a
// moment after the job's end) and forgets their kept bytes: nothing is left for the next start.
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { FileBlobStore } from "../../src/blobs/index.ts";
import { openStore } from "../../src/store/index.ts";
import { imageGraph, startTestServer } from "./helpers.ts";

describe("a clean stop", () => {
  it("names the staged outputs of the jobs that ended and keeps none of their bytes", async () => {
    const s = await startTestServer();
    try {
      const created = await s.api.post("/api/v2/jobs", { workflow: imageGraph() });
      expect(created.status).toBe(201);
      const done = await s.api.waitTerminal(created.body.id);
      expect(done.status).toBe("succeeded");
      const key = String(done.outputs[0].hash).replace(/^blake3:/, "");
      await s.close();
      const store = await openStore({ dataDir: s.dataDir });
      try {
        expect(await store.pendingBlobs()).toEqual([]);
      } finally {
        await store.close();
      }
      expect(existsSync((await FileBlobStore.open(s.dataDir)).pathOf(key))).toBe(true);
    } finally {
      await rm(s.dataDir, { recursive: true, force: true });
    }
  });
});

// Output names over a real store: a counted name continues the owner's series from counters the
// store allots in blocks (no read per name), two namers (two processes) never hand out the same
// name, a preview's name drops the engine's random letters for its series, and a name without a
// counter keeps its own name while it is free.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OUTPUT_NAME_BLOCK_MAX, OutputNamer } from "../../src/jobs/output-names.ts";
import type { Store } from "../../src/store/index.ts";
import { openJobStore, runningJob, type JobStore } from "../fixtures/job-store.ts";

let data: JobStore;
let store: Store;

beforeEach(async () => {
  data = await openJobStore("names");
  store = data.store;
});
afterEach(() => data.close());

/** Counts the store's calls by method. */
function countCalls(on: Store): Record<string, number> {
  const calls: Record<string, number> = { allotOutputNames: 0, findAssetByName: 0 };
  for (const method of ["allotOutputNames", "findAssetByName"] as const) {
    const original = on[method].bind(on) as (...args: unknown[]) => Promise<unknown>;
    (on as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      calls[method]!++;
      return original(...args);
    };
  }
  return calls;
}

/** Records an output named `name` of a new running job of alice's. */
async function recordedOutput(jobId: string, name: string, type: "image" | "text", contentType: string): Promise<void> {
  const job = await runningJob(store, jobId, "alice", ["9"]);
  const put = await data.assets.storeOutput(job, { node_id: "9", name, type, content_type: contentType, data: Buffer.from(name), folder: "output" });
  await data.assets.recordOutput(put);
}

describe("OutputNamer", () => {
  it("continues a series past the owner's names, taking counters in growing blocks without a read per name", async () => {
    await recordedOutput("job-1", "shot_00041_.png", "image", "image/png");
    const calls = countCalls(store);
    const namer = new OutputNamer(store);
    const names: string[] = [];
    for (let i = 0; i < 200; i++) names.push(await namer.reserve("alice", "output", "shot_00001_.png"));
    expect(names[0]).toBe("shot_00042_.png");
    expect(names.at(-1)).toBe("shot_00241_.png");
    expect(new Set(names).size).toBe(200);
    expect(calls.findAssetByName).toBe(0);
    // Blocks of 1, 2, 4, ... up to OUTPUT_NAME_BLOCK_MAX: 200 names in 8 writes.
    expect(calls.allotOutputNames).toBe(6 + Math.ceil((200 - 63) / OUTPUT_NAME_BLOCK_MAX));
    // Another owner and another extension are series of their own.
    expect(await namer.reserve("bob", "output", "shot_00001_.png")).toBe("shot_00001_.png");
    expect(await namer.reserve("alice", "output", "shot_00001_.webp")).toBe("shot_00001_.webp");
  });

  it("never gives two namers over one database the same name, however their calls interleave", async () => {
    const one = new OutputNamer(store);
    const two = new OutputNamer(store);
    const names = await Promise.all(Array.from({ length: 300 }, (_, i) => (i % 3 === 0 ? one : two).reserve("alice", "output", "race_00001_.png")));
    expect(new Set(names).size).toBe(300);
  });

  it("names a preview in ComfyUI's shape with the process's letters in place of the run's, counted in one series, without a read", async () => {
    const calls = countCalls(store);
    const namer = new OutputNamer(store, "kqzvb");
    const names = [];
    for (const letters of ["abcde", "qwert", "abcde"]) names.push(await namer.reserve("alice", "temp", `ComfyUI_temp_${letters}_00001_.png`));
    expect(names).toEqual(["ComfyUI_temp_kqzvb_00001_.png", "ComfyUI_temp_kqzvb_00002_.png", "ComfyUI_temp_kqzvb_00003_.png"]);
    // Another process draws its own letters: a series of its own.
    expect(await new OutputNamer(store).reserve("alice", "temp", "ComfyUI_temp_abcde_00001_.png")).toMatch(/^ComfyUI_temp_[a-z]{5}_00001_\.png$/);
    expect(await namer.reserve("alice", "temp", "other_00001_.png")).toBe("other_00001_.png");
    expect(calls.findAssetByName).toBe(0);
  });

  it("keeps a name without a counter while it is free; a taken one gets a counter", async () => {
    const namer = new OutputNamer(store);
    expect(await namer.reserve("alice", "output", "plain.txt")).toBe("plain.txt");
    await recordedOutput("job-2", "plain.txt", "text", "text/plain");
    expect(await namer.reserve("alice", "output", "plain.txt")).toBe("plain_00001_.txt");
  });
});

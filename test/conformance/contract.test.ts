// Unit tests of the suite's own machinery: rule attribution of schema errors, routing with a
// mount prefix, the status move graph, binary frame decoding, leak detection, negative cases.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { routes } from "../../generated/routes.ts";
import { attribute, CODE_STATUS, matchRoute, reachable, validator } from "../../conformance/machinery/contract.ts";
import { leaksInternals } from "../../conformance/machinery/http.ts";
import { jobInvariants } from "../../conformance/machinery/invariants.ts";
import { negativeCases } from "../../conformance/checks/requests/negative.ts";
import { decodeFrame } from "../../conformance/machinery/socket.ts";
import { JPEG } from "./double/engine.ts";

const job = {
  id: "0192f4a8-6c1e-7b3a-9f21-3c5d8e7a1b42",
  status: "queued",
  created_at: "2026-11-21T10:00:00.000Z",
  started_at: null,
  completed_at: null,
  expires_at: "2026-11-28T10:00:00.000Z",
  queue_position: 0,
  progress: null,
  outputs: [],
  error: null,
  urls: { self: "/api/v2/jobs/x", events: "/api/v2/jobs/x/events", cancel: "/api/v2/jobs/x/cancel" },
};

function rulesOf(validatorName: string, body: unknown, kind: Parameters<typeof attribute>[0]): string[] {
  const fn = validator(validatorName)!;
  expect(fn(body)).toBe(false);
  return attribute(kind, fn.errors ?? [], body)
    .map((v) => v.rule)
    .sort();
}

describe("rule attribution of schema errors", () => {
  it("a valid job has no violations", () => {
    expect(validator("schema_JobWithoutLogs")!(job)).toBe(true);
  });
  it("a missing field is JOB-1", () => {
    const { completed_at: _, ...rest } = job;
    expect(rulesOf("schema_JobWithoutLogs", rest, { kind: "job" })).toEqual(["JOB-1"]);
  });
  it("logs where they are forbidden is LOG-5, logs: null on GET is LOG-3", () => {
    expect(rulesOf("schema_JobWithoutLogs", { ...job, logs: { text: "", truncated: false, captured_at: job.created_at } }, { kind: "job" })).toEqual(["LOG-5"]);
    expect(rulesOf("schema_Job", { ...job, logs: null }, { kind: "job" })).toEqual(["LOG-3"]);
  });
  it("a status outside the enum is ST-1, a bad date-time JOB-2, a progress out of range PRG-1", () => {
    expect(rulesOf("schema_Job", { ...job, status: "processing" }, { kind: "job" })).toEqual(["ST-1"]);
    expect(rulesOf("schema_Job", { ...job, created_at: "yesterday" }, { kind: "job" })).toEqual(["JOB-2"]);
    expect(rulesOf("schema_Job", { ...job, progress: { value: 50, nodes_done: 0, nodes_total: 1 } }, { kind: "job" })).toEqual(["PRG-1"]);
  });
  it("an unknown error code is ERR-2, a broken envelope ERR-1", () => {
    expect(rulesOf("schema_ErrorEnvelope", { error: { code: "oops", message: "x" } }, { kind: "envelope" })).toEqual(["ERR-2"]);
    expect(rulesOf("schema_ErrorEnvelope", { message: "x" }, { kind: "envelope" })).toEqual(["ERR-1"]);
  });
  it("the code table has the seed's statuses", () => {
    expect(CODE_STATUS.get("invalid_workflow")).toBe(422);
    expect(CODE_STATUS.get("queue_full")).toBe(429);
    expect(CODE_STATUS.get("upstream_error")).toBe(500);
    expect(CODE_STATUS.get("insufficient_credits")).toBe(402);
  });
});

describe("routing and moves", () => {
  it("matches a path with or without the mount prefix", () => {
    expect(matchRoute("GET", "/deployment/abc/api/v2/jobs/123", "/deployment/abc")?.operationId).toBe("getJob");
    expect(matchRoute("POST", "/api/v2/jobs/123/cancel", "")?.operationId).toBe("cancelJob");
    expect(matchRoute("GET", "/api/v2/nope", "")).toBeUndefined();
  });
  it("reachability follows the contract's moves only", () => {
    expect(reachable("queued", "succeeded")).toBe(true);
    expect(reachable("running", "canceled")).toBe(true);
    expect(reachable("succeeded", "failed")).toBe(false);
    expect(reachable("canceling", "succeeded")).toBe(false);
  });
});

describe("job invariants", () => {
  it("flag queue_position, timestamps, error and logs that disagree with the status", () => {
    const rules = (j: object, source: "getJob" | "createJob" = "getJob", surface: "self-hosted" | "serverless" = "self-hosted") =>
      jobInvariants(j, source, surface).map((v) => v.rule);
    expect(rules(job)).toEqual([]);
    expect(rules({ ...job, status: "running", started_at: job.created_at, queue_position: 0 })).toEqual(["JOB-6"]);
    expect(rules({ ...job, status: "succeeded", queue_position: null, started_at: job.created_at })).toEqual(["JOB-7"]);
    expect(rules({ ...job, error: { code: "x", message: "y" } })).toEqual(["JERR-2"]);
    expect(rules({ ...job, logs: { text: "" } })).toEqual(["LOG-1"]);
    expect(rules({ ...job, logs: { text: "" } }, "getJob", "serverless")).toEqual(["LOG-3"]);
  });
});

describe("binary frames", () => {
  const frame = (words: number[], rest: Uint8Array, le = false) => {
    const head = Buffer.alloc(words.length * 4);
    for (const [i, w] of words.entries()) {
      if (le) head.writeUInt32LE(w, i * 4);
      else head.writeUInt32BE(w, i * 4);
    }
    return new Uint8Array(Buffer.concat([head, Buffer.from(rest)]));
  };
  it("decodes the seed's layouts", () => {
    expect(decodeFrame(frame([1, 1], JPEG))).toMatchObject({ frameType: 1, imageType: 1 });
    expect(decodeFrame(frame([3, 1], Buffer.from("7Uploading")))).toMatchObject({ frameType: 3, nodeId: "7", text: "Uploading" });
    const meta = Buffer.from(JSON.stringify({ node_id: "2", prompt_id: "p" }));
    expect(decodeFrame(frame([4, meta.byteLength], Buffer.concat([meta, JPEG])))).toMatchObject({ frameType: 4, metadata: { node_id: "2" } });
  });
  it("reports little-endian integers, a wrong image type and a truncated header", () => {
    expect(decodeFrame(frame([1, 1], JPEG, true))).toHaveProperty("error");
    expect(decodeFrame(frame([1, 2], JPEG))).toHaveProperty("error");
    expect(decodeFrame(new Uint8Array([0, 0, 0, 1]))).toHaveProperty("error");
  });
});

describe("leak detection", () => {
  it("flags stacks, paths and SQL, not a generic sentence", () => {
    expect(leaksInternals("Something went wrong on our side. Please try again.")).toBe(false);
    expect(leaksInternals("Error: boom\n    at run (/app/src/jobs/run.ts:12:3)")).toBe(true);
    expect(leaksInternals("SQLITE_BUSY: database is locked")).toBe(true);
  });
  it("never flags plain words (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("the", "job", "failed", "please", "retry", "later", "queue"), { maxLength: 12 }),
        (words) => !leaksInternals(words.join(" ")),
      ),
    );
  });
});

describe("negative cases", () => {
  it("every derived JSON body is refused by the spec's own request validator", () => {
    for (const route of routes) {
      const fn = route.requestBody?.validator ? validator(route.requestBody.validator) : undefined;
      if (!fn) continue;
      for (const c of negativeCases(route)) {
        if (typeof c.body !== "string" || c.contentType !== "application/json") continue;
        let body: unknown;
        try {
          body = JSON.parse(c.body);
        } catch {
          continue; // malformed JSON is invalid by construction
        }
        expect(fn(body), `${route.operationId}: ${c.name}`).toBe(false);
      }
    }
  });
  it("covers every v2 operation that takes input", () => {
    const names = (id: string) => negativeCases(routes.find((r) => r.operationId === id)!, 1024).map((c) => c.name);
    expect(names("createJob")).toEqual(
      expect.arrayContaining([
        "malformed JSON",
        "missing required workflow",
        "workflow as string",
        "an unknown field",
        "reserved field webhook_url",
        "an oversized body (1024 bytes)",
      ]),
    );
    expect(names("getJob").length).toBeGreaterThan(3);
    expect(names("listJobs")).toContain("query limit=0");
  });
});

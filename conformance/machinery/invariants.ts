// Rules a schema cannot express, applied to every job representation the suite sees: the fields
// that must agree with the status, and where `logs` may appear. A field that is missing is left to
// JOB-1 (the schema), so that one defect is reported once.
import { TERMINAL, type Violation } from "./contract.ts";
import type { Surface } from "../types.ts";

type Obj = Record<string, unknown>;

/** Where a job representation came from. */
export type JobSource = "createJob" | "getJob" | "cancelJob" | "listJobs" | "sse";

const has = (o: Obj, k: string) => Object.hasOwn(o, k);
const time = (v: unknown) => (typeof v === "string" ? Date.parse(v) : NaN);

/** Violations of the status-dependent rules in one job object. */
export function jobInvariants(job: unknown, source: JobSource, surface: Surface, demo = false): Violation[] {
  if (!job || typeof job !== "object" || Array.isArray(job)) return [];
  const j = job as Obj;
  const out: Violation[] = [];
  const status = typeof j.status === "string" ? j.status : undefined;
  const bad = (rule: string, message: string) => out.push({ rule, message });

  if (status && has(j, "queue_position")) {
    const qp = j.queue_position;
    if (status === "queued" && !(typeof qp === "number" && Number.isInteger(qp))) bad("JOB-6", `queue_position is ${JSON.stringify(qp)} while queued`);
    if (status !== "queued" && qp !== null) bad("JOB-6", `queue_position is ${JSON.stringify(qp)} while ${status}, not null`);
  }

  if (status && has(j, "started_at") && has(j, "completed_at")) {
    const started = j.started_at;
    const completed = j.completed_at;
    if (status === "queued" && (started !== null || completed !== null)) bad("JOB-7", `started_at/completed_at set while queued`);
    if ((status === "running" || status === "canceling") && (started === null || completed !== null)) {
      bad("JOB-7", `${status} with started_at=${JSON.stringify(started)} completed_at=${JSON.stringify(completed)}`);
    }
    if (TERMINAL.has(status) && completed === null) bad("JOB-7", `completed_at is null in terminal status ${status}`);
    if ((status === "succeeded" || status === "failed") && started === null) bad("JOB-7", `started_at is null in status ${status}`);
    const c = time(j.created_at);
    const s = time(started);
    const e = time(completed);
    if (!Number.isNaN(s) && !Number.isNaN(c) && s < c) bad("JOB-7", "started_at is before created_at");
    if (!Number.isNaN(e) && e < (Number.isNaN(s) ? c : s)) bad("JOB-7", "completed_at is before started_at");
  }

  if (status && has(j, "error")) {
    if (status !== "failed" && j.error !== null) bad("JERR-2", `error is set while ${status}`);
    if (status === "failed" && (j.error === null || typeof j.error !== "object")) bad("JERR-1", "status failed without an error object");
  }

  const metrics = j.metrics;
  if (status === "queued" && metrics && typeof metrics === "object" && (metrics as Obj).execution_ms !== null && has(metrics as Obj, "execution_ms")) {
    bad("JOB-5", "metrics.execution_ms is not null before the job runs");
  }

  const progress = j.progress as Obj | null | undefined;
  if (progress && typeof progress === "object" && typeof progress.nodes_done === "number" && typeof progress.nodes_total === "number") {
    if (progress.nodes_done > progress.nodes_total) bad("PRG-1", `nodes_done ${progress.nodes_done} exceeds nodes_total ${progress.nodes_total}`);
  }
  if (progress && typeof progress === "object" && typeof progress.step === "number" && typeof progress.steps === "number" && progress.step > progress.steps) {
    bad("PRG-1", `step ${progress.step} exceeds steps ${progress.steps}`);
  }

  if (Array.isArray(j.outputs) && typeof j.id === "string") {
    for (const o of j.outputs as Obj[]) {
      if (o && typeof o === "object" && typeof o.job_id === "string" && o.job_id !== j.id) bad("OUT-1", `output job_id ${o.job_id} is not the job's id`);
    }
  }

  // LOG-5 (logs outside GET) is the schema's JobWithoutLogs; these are the GET-side rules.
  if (source === "getJob" && has(j, "logs") && j.logs !== null) {
    if (surface !== "serverless") bad("LOG-1", `logs present on the ${surface} surface`);
    else if (demo) bad("LOG-4", "logs present on the demo deployment, which withholds them");
    else if (status && !TERMINAL.has(status)) bad("LOG-3", `logs present while the job is ${status} (not finished)`);
  }
  return out;
}

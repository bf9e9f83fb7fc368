// What makes two readings of a job different for a watcher. Output URLs are re-signed on every
// read, so they are left out; status, progress, committed outputs and the error count.
import type { Job, Progress } from "./types.ts";

/** A string that changes exactly when the job changed in a way a watcher cares about (progress included unless asked). */
export function jobFingerprint(job: Job, withProgress = true): string {
  return JSON.stringify([job.status, withProgress ? job.progress : null, job.outputs.map((o) => o.id), job.error?.code ?? null, job.queue_position]);
}

/** A string that changes exactly when a progress snapshot changed. */
export function progressFingerprint(progress: Progress | null | undefined): string {
  return JSON.stringify(progress ?? null);
}

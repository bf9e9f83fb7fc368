// The queue positions of one answer listing several jobs. Each job's place is counted on its own
// (concurrently, and on PostgreSQL each in a statement of its own), so a job that starts between
// two counts leaves the later one a place lower: two queued jobs of one answer could read the same
// place. One owner's queued jobs start in submission order (the fair order ranks an owner's own
// jobs by seq), so within a list of one owner's jobs the places rise with submission: each is
// made at least one more than the place of the job queued before it, the places as of the earlier
// count, never one shared.
import type { JobRecord } from "../store/index.ts";

/** Raises the positions of one owner's listed queued jobs so that they rise strictly with submission order; mutates and returns `snapshots`. */
export function risingPositions<T extends { job: JobRecord; queue_position: number | null }>(snapshots: T[]): T[] {
  const queued = snapshots.filter((s) => s.job.status === "queued" && s.queue_position !== null).sort((a, b) => a.job.seq - b.job.seq);
  let before = -1;
  for (const s of queued) {
    if (s.queue_position! <= before) s.queue_position = before + 1;
    before = s.queue_position!;
  }
  return snapshots;
}

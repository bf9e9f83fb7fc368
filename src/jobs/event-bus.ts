// Live job events, in process. SSE streams and WebSockets subscribe; the job record stays the
// source of truth, so a subscriber that misses an event resynchronizes from a read.
import type { AssetRecord, JobRecord, JobStatus } from "../store/index.ts";
import type { Progress } from "./progress.ts";

/** One live event of one job. */
export type JobEvent =
  | { type: "status"; job: JobRecord }
  | { type: "progress"; job_id: string; owner: string; progress: Progress }
  | { type: "preview"; job_id: string; owner: string; node_id: string; content_type: string; data: Buffer }
  | { type: "output"; job_id: string; owner: string; asset: AssetRecord }
  | { type: "node_start"; job_id: string; owner: string; node_id: string; class_type: string }
  | { type: "node_done"; job_id: string; owner: string; node_id: string; class_type: string; ui: Record<string, unknown> | null }
  | { type: "cached"; job_id: string; owner: string; node_ids: string[] }
  | { type: "step"; job_id: string; owner: string; node_id: string; value: number; max: number }
  | { type: "log"; job_id: string; owner: string; text: string };

export type JobEventListener = (event: JobEvent) => void;

/** Fan-out of job events by job id, plus listeners of every job (the hosted WebSocket). */
export class EventBus {
  private readonly byJob = new Map<string, Set<JobEventListener>>();
  private readonly all = new Set<JobEventListener>();
  /**
   * While a job has subscribers: the status this process last published for it, and the one last
   * heard from another process (`publishRemote`), so that a change both report goes out once.
   */
  private readonly localStatus = new Map<string, JobStatus>();
  private readonly remoteStatus = new Map<string, JobStatus>();

  /** Listens to one job; returns the unsubscribe function. */
  subscribe(jobId: string, listener: JobEventListener): () => void {
    let set = this.byJob.get(jobId);
    if (!set) this.byJob.set(jobId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.byJob.get(jobId) === set) {
        this.byJob.delete(jobId);
        this.localStatus.delete(jobId);
        this.remoteStatus.delete(jobId);
      }
    };
  }

  /** Listens to every job; returns the unsubscribe function. */
  subscribeAll(listener: JobEventListener): () => void {
    this.all.add(listener);
    return () => this.all.delete(listener);
  }

  /** Delivers an event; a throwing listener never disturbs the others or the run. */
  publish(event: JobEvent): void {
    const jobId = event.type === "status" ? event.job.id : event.job_id;
    const set = this.byJob.get(jobId);
    let heard = false;
    if (set && event.type === "status") {
      this.localStatus.set(jobId, event.job.status);
      heard = this.remoteStatus.get(jobId) === event.job.status;
      this.remoteStatus.delete(jobId);
    }
    if (set && !heard) for (const l of [...set]) safeCall(l, event);
    for (const l of this.all) safeCall(l, event);
  }

  /**
   * Delivers a status change another process made (PostgreSQL notifications) to the job's own
   * subscribers only: listeners of every job (metrics, charging, the hosted socket) count what
   * this process does, and the process that made the change counts it. Skipped when this process
   * already published that status.
   */
  publishRemote(event: Extract<JobEvent, { type: "status" }>): void {
    const jobId = event.job.id;
    const set = this.byJob.get(jobId);
    if (!set || this.localStatus.get(jobId) === event.job.status || this.remoteStatus.get(jobId) === event.job.status) return;
    this.remoteStatus.set(jobId, event.job.status);
    for (const l of [...set]) safeCall(l, event);
  }

  /** Open subscriptions of one job (tests and metrics). */
  listenerCount(jobId?: string): number {
    return jobId === undefined ? [...this.byJob.values()].reduce((n, s) => n + s.size, 0) : (this.byJob.get(jobId)?.size ?? 0);
  }
}

function safeCall(listener: JobEventListener, event: JobEvent): void {
  try {
    listener(event);
  } catch {
    // A subscriber's failure is its own (for example a socket that just closed).
  }
}

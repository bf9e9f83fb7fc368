// Jobs claimed under a lease, for several processes sharing one database (PostgreSQL): the
// persistence port the dispatcher's leased mode runs on (src/jobs/job-leases.ts). A worker
// claims the next queued job, renews the leases of the jobs it runs on a heartbeat, and learns
// from the renewal which of them were canceled or taken from it; any process fails the live jobs
// whose lease passed (`worker_lost`), but for those of a worker whose engine's runs outlive it
// (ComfyUI), which a live worker of that kind adopts instead. The job row stays the single source
// of truth.
import type { JobRecord, JobStatus, JsonObject } from "./types.ts";

/** One owner's jobs in the deployment's queue and running. */
export interface OwnerCounts {
  owner: string;
  queued: number;
  running: number;
}

/** A job claimed under a lease, and the epoch of that claim (its runs's writes name it: RunFence). */
export interface ClaimedJob {
  job: JobRecord;
  epoch: number;
  /** The job's graph, when the claim read it with the job (its run then reads none). */
  workflow?: JsonObject;
}

/** A job taken over from a worker whose lease passed (JobLeases.adoptExpired). */
export interface AdoptedJob extends ClaimedJob {
  /** It was submitted with secrets (held in the memory of the process it was submitted to). */
  secretsGiven: boolean;
}

/** The claim a batch of runs' ends carries (ClaimRider.ask): JobLeases.claimMany's arguments, without tier limits. */
export interface RidingClaim {
  workerId: string;
  leaseMs: number;
  startedAt: number;
  heldSecrets: readonly string[];
  /** Jobs to claim at most (at least 1). */
  limit: number;
}

/** What a claim that rode the ends' statement found: the jobs it claimed, in start order, and the candidates it saw. */
export interface RiddenClaim {
  claimed: ClaimedJob[];
  /** Candidates seen: more than were claimed means some were held by another claim (a claim of its own may wait for them). */
  candidates: number;
}

/**
 * A worker's claim riding its runs' ends (Store.carryClaims): the ends' statement and the claim
 * of the jobs that take their slots commit as one, where a claim beside each end cost a statement
 * and a commit of its own.
 */
export interface ClaimRider {
  /**
   * Called as a batch of ends of `jobIds` is written in one statement: the claim to carry, or null
   * for none. Each call is answered once (`answered`) when it returned a claim.
   */
  ask(jobIds: readonly string[]): RidingClaim | null;
  /**
   * The claim's outcome, before the ends' own outcomes settle: what it claimed, or the error that
   * failed the statement (rolled back, or, without an answer, perhaps committed).
   */
  answered(claim: RidingClaim, outcome: RiddenClaim | { error: unknown }): void;
}

/** The database side of leases. */
export interface JobLeases {
  /**
   * Moves the next claimable queued job (in the fair order of src/jobs/fair-queue.ts; owners at
   * their `slots` skipped, others' secret jobs too) to `running` under this worker's lease,
   * atomically across processes; null when there is none. `onlyHeld`: among `heldSecrets` only.
   */
  claim(
    workerId: string,
    leaseMs: number,
    startedAt: number,
    slots: ((owner: string) => Promise<number>) | undefined,
    heldSecrets: readonly string[],
    onlyHeld?: boolean,
  ): Promise<ClaimedJob | null>;
  /**
   * As `claim`, up to `limit` jobs at once, the next ones in that order (without tier limits:
   * with `slots`, one); [] when none is claimable. Claims of several processes do not wait for
   * each other: they take what claims one after another would.
   */
  claimMany(
    workerId: string,
    leaseMs: number,
    startedAt: number,
    slots: ((owner: string) => Promise<number>) | undefined,
    heldSecrets: readonly string[],
    onlyHeld: boolean,
    limit: number,
  ): Promise<ClaimedJob[]>;
  /**
   * As claim, but the job stays `queued` (started_at null) under this worker's lease: an engine
   * with a queue of its own (ComfyUI) starts it later, and the run then moves it to `running` with
   * the store's transitionJob fenced by this claim. No worker claims it again; its lease is renewed
   * and passes as a running job's (`worker_lost`), and it holds a slot of its owner's meanwhile.
   * `resumable`: the worker's engine runs it outside the process (ComfyUI), so that the job, queued
   * or running, is adopted rather than failed when the lease passes (adoptExpired).
   */
  claimQueued(
    workerId: string,
    leaseMs: number,
    slots: ((owner: string) => Promise<number>) | undefined,
    heldSecrets: readonly string[],
    onlyHeld?: boolean,
    resumable?: boolean,
  ): Promise<ClaimedJob | null>;
  /**
   * Takes over, for this worker, the resumable jobs (claimQueued) whose lease passed, whatever their
   * status: a new lease under a raised epoch, so that the old holder's writes are refused. Each job
   * goes to one adopter (up to `limit` per call); [] when there is none.
   */
  adoptExpired(workerId: string, leaseMs: number, limit: number): Promise<AdoptedJob[]>;
  /** Of `ids`, the live jobs another worker holds now (adopted once this worker's lease passed). */
  heldByOthers(workerId: string, ids: readonly string[]): Promise<string[]>;
  /**
   * The live jobs carrying this worker's id, with their claims' epochs: after a claim whose answer
   * was lost (the connection dropped at its commit), the jobs it may have claimed after all.
   */
  heldBy(workerId: string): Promise<ClaimedJob[]>;
  /**
   * Queued jobs that start before this one in that order, across every process; null when it is
   * not queued. `read`: its record as the store just read it (it may carry what placing it needs).
   */
  position(jobId: string, read?: JobRecord): Promise<number | null>;
  /** Every owner's queued and running jobs, across every process. */
  queueCounts(): Promise<OwnerCounts[]>;
  /** An owner's queued and running jobs, across every process. */
  liveCount(owner: string): Promise<number>;
  /**
   * Extends the leases of this worker's live jobs among `ids` (those it claimed while queued
   * included), and takes or extends those of the queued jobs among them whose secrets it holds;
   * returns the status of each it holds.
   */
  renew(workerId: string, ids: readonly string[], leaseMs: number): Promise<Map<string, JobStatus>>;
  /**
   * Gives up this worker's leases among `ids` (what renew would extend) at once, for the next
   * failExpired to end them; a resumable one (a prompt the stop left in ComfyUI) is taken over by
   * another worker instead, as when its worker died.
   */
  release(workerId: string, ids: readonly string[]): Promise<void>;
  /**
   * Fails `worker_lost` every live job whose lease passed (by the database's clock), and
   * `partner_key_lost` every queued job whose secrets' holder stopped renewing; the jobs it moved.
   * A resumable job (claimQueued) is left to the adopters for `adoptGraceMs` more (default 0),
   * counted from the first sweep that found its lease passed and its row free.
   */
  failExpired(completedAt: number, adoptGraceMs?: number): Promise<JobRecord[]>;
  /** Of `ids`, those no longer queued (taken by a worker, canceled or expired elsewhere). */
  notQueued(ids: readonly string[]): Promise<string[]>;
  close(): Promise<void>;
}

// What differs between the three surfaces, in one place: who the caller is, whether a
// submission may proceed (credits, subscription, deployment state), what a job costs, how many
// jobs an account runs at once, and who sees logs. The v2 contract itself never differs.
import { timingSafeEqual } from "node:crypto";
import type { Surface } from "../config/config.ts";
import { ServiceError } from "../domain/errors.ts";
import type { EventBus } from "../jobs/event-bus.ts";
import type { Caller } from "../domain/caller.ts";
import { isTerminalStatus, type DeploymentRecord, type Directory, type JobRecord } from "../store/index.ts";
import { hashApiKey } from "./api-keys.ts";
import type { TierTable } from "../config/tiers.ts";

export interface SurfacePolicyOptions {
  surface: Surface;
  /** The self-hosted static token; null = open. */
  token: string | null;
  directory: Directory | null;
  tiers: TierTable;
  /** Credits charged per second of execution. */
  creditRate: number;
  /** Seconds to come back after `deployment_not_ready`. */
  notReadyRetryAfter: number;
  /** The operator token of GET /metrics; null or absent = open on self-hosted, not served elsewhere. */
  metricsToken?: string | null;
}

/** Owner of anonymous callers of the public demo deployment. */
export const DEMO_OWNER = "anonymous";

/** The surface rules of one server. */
export class SurfacePolicy {
  readonly o: SurfacePolicyOptions;

  constructor(options: SurfacePolicyOptions) {
    this.o = options;
  }

  get surface(): Surface {
    return this.o.surface;
  }

  /** Whether this surface serves the hosted interface. */
  get servesHosted(): boolean {
    return this.o.surface !== "serverless";
  }

  /** Whether jobs' standard output is captured. */
  get capturesLogs(): boolean {
    return this.o.surface === "serverless";
  }

  /**
   * The caller of a v2 request from its bearer key and (serverless) deployment id.
   * 401 `unauthorized` without a valid key (the demo deployment excepted), 403 `forbidden`
   * for an inactive subscription, 404 `not_found` for an unknown deployment.
   */
  async v2Caller(bearer: string | null, deploymentId: string | null): Promise<Caller> {
    if (this.o.surface === "self-hosted") return this.staticToken(bearer);
    let deployment: DeploymentRecord | null = null;
    if (this.o.surface === "serverless") {
      deployment = deploymentId === null ? null : await this.directory.getDeployment(deploymentId);
      if (!deployment) throw new ServiceError("not_found", "Not found.");
      if (deployment.demo && bearer === null) return { owner: DEMO_OWNER, deployment_id: deployment.id, demo: true };
    }
    const account = await this.accountOf(bearer);
    if (!account.subscription_active) throw new ServiceError("forbidden", "Your subscription is not active.");
    return { owner: account.name, deployment_id: deployment?.id ?? null, demo: deployment?.demo ?? false };
  }

  /** The caller of a hosted request (`X-API-Key`, or the WebSocket's `token`). */
  async hostedCaller(key: string | null): Promise<Caller & { subscription_active: boolean }> {
    if (this.o.surface === "self-hosted") return { ...this.staticToken(key), subscription_active: true };
    const account = await this.accountOf(key);
    return { owner: account.name, subscription_active: account.subscription_active };
  }

  /** Refuses a submission the surface does not allow now (deployment state, credits). */
  async beforeSubmit(caller: Caller): Promise<void> {
    if (this.o.surface === "self-hosted") return;
    if (caller.deployment_id) {
      const d = await this.directory.getDeployment(caller.deployment_id);
      if (!d) throw new ServiceError("not_found", "Not found.");
      if (d.state === "stopped") throw new ServiceError("deployment_stopped", "This deployment is stopped.");
      if (d.state !== "ready")
        throw new ServiceError("deployment_not_ready", "This deployment is not ready yet; retry later.", null, this.o.notReadyRetryAfter);
    }
    if (caller.demo) return;
    const account = await this.directory.getAccount(caller.owner);
    if (!account || account.credits <= 0) throw new ServiceError("insufficient_credits", "Your account has no credits left.");
  }

  /** How many jobs of this owner may run at once (Infinity where tiers do not apply). */
  async slotsFor(owner: string): Promise<number> {
    if (this.o.surface !== "cloud") return Number.POSITIVE_INFINITY;
    const account = await this.directory.getAccount(owner);
    return account ? (this.o.tiers[account.tier] ?? 1) : 1;
  }

  /**
   * Whether GET /metrics may be read with this bearer token. It aggregates every account, so on
   * cloud and serverless it needs the operator token and is not served (404) without one; on
   * self-hosted it is open unless a token is set. 401 `unauthorized` for a wrong or missing token.
   */
  assertMetricsAccess(bearer: string | null): void {
    const token = this.o.metricsToken ?? null;
    if (token === null) {
      if (this.o.surface === "self-hosted") return;
      throw new ServiceError("not_found", "Not found.");
    }
    if (bearer === null || !sameSecret(bearer, token)) throw new ServiceError("unauthorized", "Missing or invalid credentials.");
  }

  /**
   * Whether the caller is whoever asks (an open self-hosted server, the demo deployment): bounds
   * per caller then count per client address, or one client would exhaust them for everyone.
   */
  isAnonymous(caller: Caller): boolean {
    return caller.demo === true || (this.o.surface === "self-hosted" && this.o.token === null);
  }

  /** Whether `logs` may be shown to this caller (never on the demo deployment). */
  showsLogs(caller: Caller): boolean {
    return this.capturesLogs && !caller.demo;
  }

  /** Charges each job's execution time to its account when it ends. */
  chargeOnEnd(events: EventBus, onError: (err: unknown) => void): () => void {
    if (this.o.surface === "self-hosted") return () => undefined;
    return events.subscribeAll((e) => {
      if (e.type !== "status" || !isTerminalStatus(e.job.status) || e.job.owner === DEMO_OWNER) return;
      const cost = this.costOf(e.job);
      if (cost > 0) this.directory.chargeCredits(e.job.owner, cost).catch(onError);
    });
  }

  /** Credits a job costs: its execution seconds at the configured rate. */
  costOf(job: Pick<JobRecord, "started_at" | "completed_at">): number {
    if (job.started_at === null || job.completed_at === null) return 0;
    return ((job.completed_at - job.started_at) / 1000) * this.o.creditRate;
  }

  private get directory(): Directory {
    if (!this.o.directory) throw new Error("this surface needs the account directory");
    return this.o.directory;
  }

  private staticToken(given: string | null): Caller {
    if (this.o.token !== null && (given === null || !sameSecret(given, this.o.token))) {
      throw new ServiceError("unauthorized", "Missing or invalid credentials.");
    }
    return { owner: "" };
  }

  private async accountOf(key: string | null) {
    const found = key === null ? null : await this.directory.findApiKey(hashApiKey(key));
    const account = found ? await this.directory.getAccount(found.account) : null;
    if (!account) throw new ServiceError("unauthorized", "Missing or invalid credentials.");
    return account;
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

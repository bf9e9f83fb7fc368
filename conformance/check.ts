// A check, and the handle it runs with: the instrumented HTTP layer, the generated client,
// the run's options and surface profile, and ways to fail, fail softly or skip.
import { createFetchClient, type FetchClient } from "../generated/fetch-client.ts";
import { describeRequest, excerpt, type Auth, type Exchange, type Http } from "./machinery/http.ts";
import type { Profile } from "./profile.ts";
import { ruleIdOf } from "./rules.ts";
import type { ConformanceOptions, FailureDetail, Surface } from "./types.ts";
import type { Graph } from "./checks/support/workflows.ts";

/** What the run learned about the surface before the checks. */
export interface Capabilities {
  /** The surface serves the hosted interface (GET /api/object_info answered 200). */
  hosted: boolean;
  /** What GET /api/object_info answered, in words, for the skips of the hosted checks. */
  hostedProbe?: string;
  /** Node classes of /api/object_info, when known. */
  classes?: Set<string>;
  /** The surface takes job labels (a label-filtered listing answered 200): the run's jobs carry its run label. */
  labels?: boolean;
}

/** Options with defaults filled in. */
export type ResolvedOptions = ConformanceOptions &
  Required<
    Pick<
      ConformanceOptions,
      "surface" | "explore" | "slowSeconds" | "fillQueue" | "oversizeMb" | "requestTimeoutMs" | "checkTimeoutMs" | "jobTimeoutMs" | "rereadAfterSeconds"
    >
  >;

/** What every check of one run shares. */
export interface RunContext {
  http: Http;
  /** The value of the `conformance-run` label every v2 job of this run carries where the surface takes labels. */
  runLabel: string;
  options: ResolvedOptions;
  profile: Profile;
  caps: Capabilities;
}

/** A reason to skip, or undefined when the check applies. */
export type Applicability = (run: RunContext) => string | undefined;

/** One conformance check; its title begins with the rule ID it checks. */
export interface Check {
  title: string;
  rule: string;
  /** Part of the static subset: shape checks that need no execution (they run against a mock). */
  static: boolean;
  /** Runs after every other check, over what the run saw. */
  final: boolean;
  when?: Applicability;
  timeoutMs?: number;
  run: (t: T) => Promise<void>;
}

export interface CheckOptions {
  static?: boolean;
  final?: boolean;
  /** Surfaces the rule applies to; others skip with the reason. */
  surfaces?: Surface[];
  when?: Applicability;
  timeoutMs?: number;
}

/** Declares a check; throws at load time when the title does not begin with a known rule ID. */
export function check(title: string, optsOrRun: CheckOptions | ((t: T) => Promise<void>), maybeRun?: (t: T) => Promise<void>): Check {
  const opts = typeof optsOrRun === "function" ? {} : optsOrRun;
  const run = typeof optsOrRun === "function" ? optsOrRun : maybeRun!;
  const rule = ruleIdOf(title);
  if (!rule) throw new Error(`check title does not begin with a rule ID: ${title}`);
  const surfaces = opts.surfaces;
  const when: Applicability | undefined =
    surfaces || opts.when
      ? (r) =>
          surfaces && !surfaces.includes(r.options.surface)
            ? `applies to the ${surfaces.join(" and ")} surface${surfaces.length > 1 ? "s" : ""} only`
            : opts.when?.(r)
      : undefined;
  return { title, rule, static: opts.static ?? false, final: opts.final ?? false, when, timeoutMs: opts.timeoutMs, run };
}

/** Thrown to end a check as skipped. */
export class Skip extends Error {}

/** Thrown to end a check as failed (its details are already recorded). */
export class Failed extends Error {}

/** The handle a check runs with. */
export class T {
  readonly failures: FailureDetail[] = [];
  readonly cleanups: Array<() => Promise<void>> = [];
  /** The generated client, bound to the base URL, going through the instrumented layer. */
  readonly api: FetchClient;
  /** Ids of the jobs this check created. */
  readonly created: string[] = [];
  /** Last status seen per job id by this check's sequential reads (ST-3/ST-4). */
  readonly lastStatus = new Map<string, string>();

  readonly run: RunContext;
  readonly check: Check;

  constructor(run: RunContext, check: Check) {
    this.run = run;
    this.check = check;
    this.api = this.client("auto");
  }

  get http(): Http {
    return this.run.http;
  }
  get options(): ResolvedOptions {
    return this.run.options;
  }
  get profile(): Profile {
    return this.run.profile;
  }

  /** The generated client with another way to authenticate. */
  client(auth: Auth): FetchClient {
    return createFetchClient({ baseUrl: `${this.http.base.origin}${this.http.basePath}`, fetch: this.http.fetchFor(auth) });
  }

  /** The exchange behind a generated-client response. */
  ex(res: Response): Exchange | undefined {
    return this.http.exchangeOf(res);
  }

  /** Records a failure of this check and goes on. */
  softFail(message: string, ex?: Exchange, rule = this.check.rule): void {
    this.failures.push({ rule, message, request: ex ? describeRequest(ex) : undefined, excerpt: ex ? excerpt(ex) : undefined });
  }

  /** Records a failure and ends the check. */
  fail(message: string, ex?: Exchange): never {
    this.softFail(message, ex);
    throw new Failed(message);
  }

  /** Records a failure unless cond holds; returns cond. */
  expect(cond: boolean, message: string, ex?: Exchange): boolean {
    if (!cond) this.softFail(message, ex);
    return cond;
  }

  /** Ends the check as skipped. */
  skip(reason: string): never {
    throw new Skip(reason);
  }

  /** Skips unless a precondition holds (a defect reported under another rule, or a missing capability). */
  need(cond: unknown, reason: string): asserts cond {
    if (!cond) this.skip(reason);
  }

  /** Runs fn when the check ends, pass or fail. */
  defer(fn: () => Promise<void>): void {
    this.cleanups.push(fn);
  }

  /** Skips when the surface is known to lack a node class the graph uses. */
  requireClasses(graph: Graph, what: string): void {
    const known = this.run.caps.classes;
    if (!known) return;
    const missing = [...new Set(Object.values(graph).map((n) => n.class_type))].filter((c) => !known.has(c));
    if (missing.length) {
      const option = ["slow", "steps", "failing"].includes(what) ? `; --${what}-workflow with a graph of the nodes it has makes this apply` : "";
      this.skip(`GET /api/object_info lists no ${missing.join(", ")}, which the ${what} graph needs${option}`);
    }
  }

  /** Why waiting is pointless (a job in a status outside the enum may never end); set by the job reads. */
  waitingStopped: string | null = null;

  /**
   * Polls fn until it returns a value other than undefined, or fails at the deadline; skips at
   * once when a read has shown that what it waits for may never come (`waitingStopped`).
   */
  async until<V>(what: string, fn: () => Promise<V | undefined>, timeoutMs = this.options.jobTimeoutMs, intervalMs = 100): Promise<V> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (this.waitingStopped !== null) this.skip(`${what}: ${this.waitingStopped}`);
      if (Date.now() > deadline) this.fail(`${what}: not reached within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

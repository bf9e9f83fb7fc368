// The event relay of a PostgreSQL deployment. Run events go out as notifications on a channel of
// the deployment's schema, batched (held up to 50 ms for a write of the run to ride in) and cut
// into parts that fit; status changes are notified by the jobs table's trigger. Both are heard on one connection, so
// a run's events arrive before the end its process commits after them (notifications are
// delivered in commit order). Previews go through Redis when `--redis-url` is set; without it,
// small ones go as notifications and larger ones are dropped (a newer preview follows).
import { createHash } from "node:crypto";
import pg from "pg";
import {
  jobFromPostgresRow,
  openPostgresPool,
  PG_NOTIFYING_SQL,
  PG_STATUS_CHANNEL,
  PG_TYPES,
  payloadsParam,
  type JobStatus,
  type Notifications,
  type PostgresOptions,
} from "../store/index.ts";
import type { EventRelay, RemoteNotice, RunEvent } from "./event-relay.ts";
import { RedisPreviews } from "./redis-previews.ts";
import { BatchJoiner, encodeBatch } from "./wire.ts";

/** The largest preview sent as notifications when there is no Redis (about 9 parts). */
export const NOTIFY_PREVIEW_MAX_BYTES = 48 * 1024;
/**
 * How long a run's events wait for a write of the run to ride in (a progress snapshot, its end)
 * before they go out in a batch of their own: a short run's events cost no transaction of their own.
 */
export const EVENTS_HOLD_MS = 50;
/** Wait before listening again after the connection was lost. */
const RELISTEN_MS = 1_000;

export interface PostgresRelayOptions extends PostgresOptions {
  /** This process's tag: the suffix of its connections' application_name, and the sender of its events. */
  tag: string;
  /** Redis for previews (`--redis-url`); null: previews go as notifications when small. */
  redisUrl: string | null;
}

/** A channel of a schema, `flowgate_<kind>_<schema>` (a PostgreSQL identifier: 63 bytes at most). */
function schemaChannel(kind: "events" | "wake", schema: string): string {
  const name = `flowgate_${kind}_${schema}`;
  return name.length <= 63 ? name : `flowgate_${kind}_${createHash("sha256").update(schema).digest("hex").slice(0, 32)}`;
}

export class PostgresRelay implements EventRelay {
  readonly #pool: pg.Pool;
  readonly #options: PostgresRelayOptions;
  readonly #schema: string;
  readonly #channel: string;
  readonly #wakeChannel: string;
  readonly #redis: RedisPreviews | null;
  #pending: RunEvent[] = [];
  #draining: Promise<void> | null = null;
  /** Sends the batch being held a turn from now rather than when its hold ends. */
  #fireSoon: () => void = () => undefined;
  /** The last batch (or carried write of no one job) of this process's events: every later step waits for it. */
  #tail: Promise<void> = Promise.resolve();
  /** Per job, the last carried write of its events: the next write of that job, and the next batch, wait for it. */
  readonly #jobTails = new Map<string, Promise<void>>();
  #batch = 0;
  #wake = false;
  /** The listener's wants (see wantWakes, wantFollow) and the LISTEN/UNLISTEN that follows them. */
  #wants: { set: (change: { follow?: boolean; wakes?: boolean }) => void; applied: () => Promise<void> } | null = null;

  private constructor(pool: pg.Pool, options: PostgresRelayOptions, schema: string, redis: RedisPreviews | null) {
    this.#pool = pool;
    this.#options = options;
    this.#schema = schema;
    this.#channel = schemaChannel("events", schema);
    this.#wakeChannel = schemaChannel("wake", schema);
    this.#redis = redis;
  }

  /** Connects to the database (one connection for sends) and to Redis when configured. */
  static async open(options: PostgresRelayOptions): Promise<PostgresRelay> {
    const pool = await openPostgresPool({ ...options, maxConnections: 1, applicationName: `flowgate-relay ${options.tag}` });
    try {
      const { rows } = await pool.query<{ db: string; schema: string }>("SELECT current_database() AS db, current_schema() AS schema");
      const { db, schema } = rows[0]!;
      const redis = options.redisUrl === null ? null : await RedisPreviews.open(options.redisUrl, `flowgate:previews:${db}:${schema}`);
      return new PostgresRelay(pool, options, schema, redis);
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
  }

  send(event: RunEvent): void {
    if (event.type === "preview") {
      if (this.#redis) {
        // The events said before it go now, not after their hold: listeners put a preview after its node's start.
        if (this.#pending.length > 0) this.#schedule(0);
        return this.#redis.publish(this.#options.tag, event);
      }
      if (event.data.length > NOTIFY_PREVIEW_MAX_BYTES) return;
    }
    this.#pending.push(event);
    this.#schedule(EVENTS_HOLD_MS);
  }

  wake(): void {
    this.#wake = true;
    this.#schedule(0);
  }

  /**
   * The events said go out in one batch `holdMs` later (a wake: a turn later), unless a write of a
   * run takes them into its own transaction first (a progress snapshot, the end; see `carry`): a
   * short run's events ride in its end's statement.
   */
  #schedule(holdMs: number): void {
    if (this.#draining === null) {
      let fire!: () => void;
      const due = new Promise<void>((resolve) => (fire = resolve));
      const timer = setTimeout(fire, holdMs);
      this.#fireSoon = () => {
        clearTimeout(timer);
        setImmediate(() => setImmediate(fire));
      };
      if (holdMs === 0) this.#fireSoon();
      this.#draining = due.then(() => this.#inTurn(() => this.#drain()));
    } else if (holdMs === 0) this.#fireSoon();
  }

  /**
   * Runs `step` once every batch and carried write before it has committed: this process's
   * notifications commit in the order said. With `jobId`, the step carries that job's events only
   * and waits only for the batches and that job's writes before it: the writes of different jobs
   * (their ends) go to the store together, which commits them in one transaction.
   */
  #inTurn<T>(step: () => Promise<T>, jobId?: string): Promise<T> {
    const settled = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        () => undefined,
      );
    if (jobId === undefined) {
      const run = Promise.all([this.#tail, ...this.#jobTails.values()]).then(step);
      this.#tail = settled(run);
      return run;
    }
    const run = Promise.all([this.#tail, this.#jobTails.get(jobId)]).then(step);
    const tail = settled(run);
    this.#jobTails.set(jobId, tail);
    void tail.then(() => {
      if (this.#jobTails.get(jobId) === tail) this.#jobTails.delete(jobId);
    });
    return run;
  }

  /** The events waiting (of one job, or all), as one batch's parts (null: none), taken out of the queue. */
  #take(jobId?: string): { events: RunEvent[]; parts: string[] } | null {
    let events: RunEvent[];
    if (jobId === undefined) {
      events = this.#pending;
      this.#pending = [];
    } else {
      events = this.#pending.filter((event) => event.job_id === jobId);
      if (events.length > 0) this.#pending = this.#pending.filter((event) => event.job_id !== jobId);
    }
    return events.length === 0 ? null : { events, parts: encodeBatch(this.#options.tag, this.#batch++, events) };
  }

  carry<T>(write: (notify: Notifications | undefined) => Promise<T>, then: readonly RunEvent[] = [], jobId?: string): Promise<T> {
    return this.#inTurn(async () => {
      const taken = this.#take(jobId);
      const after = then.length === 0 ? [] : encodeBatch(this.#options.tag, this.#batch++, [...then]);
      let committed = false;
      try {
        if (taken === null && after.length === 0) return await write(undefined);
        const sent = () => void (committed = true);
        return await write({ channel: this.#channel, payloads: taken?.parts ?? [], ...(after.length > 0 ? { ifMoved: after } : {}), sent });
      } catch (err) {
        // Not committed (a write that failed after its first statement committed them sent them):
        // the events go with the next write or batch, still in order.
        if (taken !== null && !committed) {
          this.#pending.unshift(...taken.events);
          this.#schedule(0);
        }
        throw err;
      }
    }, jobId);
  }

  /** Resolves once the events said so far left (a batch under way takes what came meanwhile in the next). */
  async flushed(): Promise<void> {
    await this.#draining;
    await Promise.all([this.#tail, ...this.#jobTails.values()]);
  }

  async #drain(): Promise<void> {
    // Cleared first: what is said from now on is scheduled again, behind this batch.
    this.#draining = null;
    if (this.#wake) {
      // One wake per turn however many jobs were queued in it: idle workers look for work now.
      // Sent after the insert's commit, in a transaction that writes nothing: a NOTIFY in the
      // insert's own transaction would hold PostgreSQL's notification lock (one for the whole
      // server) through that commit's WAL flush, and submissions measured 30 % slower so.
      this.#wake = false;
      await this.#pool.query("SELECT pg_notify($1, $2)", [this.#wakeChannel, this.#options.tag]).catch(() => undefined);
    }
    const taken = this.#take();
    // One statement: the parts commit together. A failure loses these live events only.
    if (taken !== null) await this.#pool.query(PG_NOTIFYING_SQL.notify, [this.#channel, payloadsParam(taken.parts)]).catch(() => undefined);
  }

  /**
   * Whether this process wants wakes now (a dispatching process with free slots and nothing to
   * claim). PostgreSQL signals every listening backend of the database at each notifying commit,
   * whatever its channel, and each signal costs that backend a transaction: a busy worker does not
   * listen. Wanting them again wakes this process once (the claim after LISTEN catches what was
   * queued meanwhile).
   */
  wantWakes(on: boolean): void {
    this.#wants?.set({ wakes: on });
  }

  /**
   * Whether this process follows other processes' jobs now (a stream or socket here). Following
   * again reads back what was said meanwhile (a `resync` notice), as after a lost connection.
   */
  wantFollow(on: boolean): void {
    this.#wants?.set({ follow: on });
  }

  /** Resolves once the listener listens as wanted now (or has no connection: it resyncs when back). */
  async listening(): Promise<void> {
    await this.#wants?.applied();
  }

  /**
   * Listens on a connection of its own, opened again when lost. What it listens to follows what
   * is wanted (see wantFollow, wantWakes): everything while it follows, the wakes alone while it
   * only wants those, nothing otherwise. Once it follows again (after a loss, or after it did
   * not follow) a `resync` notice says that what was said meanwhile was not heard (the follower
   * reads it back); wakes wanted again wake it. Changes and events of this process itself are left out.
   */
  async listen(
    onNotice: (notice: RemoteNotice) => void,
    options: { wakesOnly?: boolean; follow?: boolean; wakes?: boolean } = {},
  ): Promise<() => Promise<void>> {
    const wakesOnly = options.wakesOnly === true;
    const wanted = { follow: !wakesOnly && options.follow !== false, wakes: options.wakes !== false };
    /** The channels the connection listens on now; LISTEN and UNLISTEN go one after another. */
    let listening = new Set<string>();
    let switching = Promise.resolve();
    const tag = this.#options.tag;
    const joiner = new BatchJoiner();
    const onStatus = (payload: string): void => {
      try {
        const n = JSON.parse(payload) as { schema?: unknown; id?: unknown; owner?: unknown; status?: unknown; by?: unknown; job?: unknown };
        if (n.schema !== this.#schema || typeof n.id !== "string" || typeof n.owner !== "string" || typeof n.status !== "string") return;
        if (typeof n.by === "string" && n.by.endsWith(` ${tag}`)) return; // this process made it and published it
        const notice: RemoteNotice = { kind: "status", id: n.id, owner: n.owner, status: n.status as JobStatus };
        // The row as the change wrote it (migration 11), when it fit: no read back.
        if (typeof n.job === "object" && n.job !== null && (n.job as { id?: unknown }).id === n.id)
          notice.job = jobFromPostgresRow(n.job as Record<string, unknown>);
        onNotice(notice);
      } catch {
        // not ours
      }
    };
    const onEvents = (payload: string): void => {
      const batch = joiner.take(payload);
      if (batch && batch.sender !== tag) onNotice({ kind: "events", events: batch.events });
    };
    let client: pg.Client | null = null;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    /** The first connection's first LISTENs: nothing was said before them that this listener owed anyone. */
    let opening = true;
    const followChannels = [PG_STATUS_CHANNEL, this.#channel, this.#wakeChannel];
    /** Brings the connection's LISTENs to what is wanted now, and says what it may have missed. */
    const apply = (): void => {
      switching = switching
        .then(async () => {
          const c = client;
          if (c === null || stopped) return;
          const want = new Set(wanted.follow ? followChannels : wanted.wakes ? [this.#wakeChannel] : []);
          const add = [...want].filter((ch) => !listening.has(ch));
          const drop = [...listening].filter((ch) => !want.has(ch));
          if (add.length === 0 && drop.length === 0) return;
          await c.query([...add.map((ch) => `LISTEN "${ch}"`), ...drop.map((ch) => `UNLISTEN "${ch}"`)].join("; "));
          const wasFollowing = listening.has(PG_STATUS_CHANNEL);
          const wasWoken = listening.has(this.#wakeChannel);
          listening = want;
          if (client !== c) return;
          // What was committed while not listening is read, not heard.
          if (want.has(PG_STATUS_CHANNEL) && !wasFollowing) {
            if (!opening) onNotice({ kind: "resync" });
          } else if (want.has(this.#wakeChannel) && !wasWoken) onNotice({ kind: "wake" });
        })
        .catch(() => undefined); // a lost connection listens again as wanted when it is back
    };
    const connect = async (): Promise<void> => {
      const c = new pg.Client({
        connectionString: this.#options.url,
        application_name: `flowgate-listen ${tag}`,
        types: PG_TYPES,
        ...(this.#options.schema === undefined ? {} : { options: `-c search_path=${this.#options.schema}` }),
      });
      const again = () => {
        if (stopped || client !== c) return;
        client = null;
        retry = setTimeout(() => void connect().catch(again), RELISTEN_MS);
      };
      client = c;
      c.on("error", again);
      c.on("end", again);
      c.on("notification", (n) => {
        if (n.channel === PG_STATUS_CHANNEL) onStatus(n.payload ?? "");
        else if (n.channel === this.#wakeChannel) n.payload !== tag && onNotice({ kind: "wake" });
        else onEvents(n.payload ?? "");
      });
      await c.connect();
      listening = new Set();
      apply();
      await switching;
    };
    const wants = {
      set: (change: { follow?: boolean; wakes?: boolean }) => {
        if (change.wakes !== undefined) wanted.wakes = change.wakes;
        if (change.follow !== undefined) wanted.follow = !wakesOnly && change.follow;
        apply();
      },
      applied: () => switching,
    };
    this.#wants = wants;
    try {
      await connect();
      opening = false;
    } catch (err) {
      stopped = true;
      clearTimeout(retry);
      await (client as pg.Client | null)?.end().catch(() => undefined); // set inside connect
      throw err;
    }
    const stopPreviews =
      this.#redis && !wakesOnly ? await this.#redis.subscribe((sender, preview) => sender !== tag && onNotice({ kind: "events", events: [preview] })) : null;
    return async () => {
      stopped = true;
      if (this.#wants === wants) this.#wants = null;
      clearTimeout(retry);
      await stopPreviews?.();
      await client?.end().catch(() => undefined);
    };
  }

  async close(): Promise<void> {
    await this.flushed();
    await this.#redis?.close();
    await this.#pool.end();
  }
}

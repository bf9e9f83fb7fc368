// The order-exploring harness of the exactly-once guarantee in front of ComfyUI: real processes
// (an API node `serve --no-dispatch`, `worker --engine comfyui`s, the ComfyUI double in a process
// of its own) driven through a seeded schedule of the orders deployments produce (the adopting
// worker started before or after the prompts; the holder SIGKILLed, SIGSTOPped past its lease
// then continued, or SIGTERMed; one or two takeovers in a row; the double restarted, its queue
// lost; the running prompt finishing during the takeover, between the holder's lease lapsing and
// the adopter's look at the double; the holder stopped between its lease renewal and its
// POST /prompt landing, the POST landing as its lease lapses or behind the new holder's copy),
// then the invariants checked for every job against the double's own execution log (and, with
// `positions`, the queued jobs' places listed all along). A prompt run twice in a case
// docs/comfyui.md names (the stale copy started before its poster could take it back; the new
// holder looked before the stale POST landed; a run nobody followed forgotten by the double's
// restart) is recognised as that case, from the stale worker's own account and the double's log,
// printed and counted, the job's other invariants still checked; any other second run fails.
// exploreSqliteFront does the same for a single `serve` on SQLite, SIGKILLed mid-run and
// restarted on its data directory.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import type { CliProcess } from "../cli/cli.ts";
import type { FaultDeployment } from "../faults/deployment.ts";
import { adminQuery } from "../postgres/pg.ts";
import { Api, spawnCli, waitFor, type CliServer } from "../server/helpers.ts";
import { comfyFlags, ROOT, textGraph } from "./helpers.ts";

/** A small deterministic generator (mulberry32): the same seed, the same schedule. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One record of the double (see double-process.ts): an execution's start or end, or a POST /prompt landing. */
interface ExecutionRecord {
  type: "start" | "end" | "queued";
  promptId: string;
  at: number;
  status?: "success" | "error" | "interrupted";
  /** `queued`: the POST the double held (`holdPost`). */
  held?: boolean;
}

/** The ComfyUI double in a child process; `restart` kills it (its queue and history are lost) and starts it on the same port. */
export class DoubleProcess {
  url = "";
  private child: ChildProcess | null = null;
  private port = 0;
  private readonly dir: string;
  private readonly runMs: number;
  /** The first run holds its first prompt until `release` (not after a restart). */
  private hold: boolean;
  /** The first run holds its POST /prompt of this number (1-based; 0: none) until `land` (not after a restart). */
  private holdPost: number;
  /** What the running double printed. */
  private out = "";

  private constructor(dir: string, runMs: number, hold: boolean, holdPost: number) {
    this.dir = dir;
    this.runMs = runMs;
    this.hold = hold;
    this.holdPost = holdPost;
  }

  /**
   * Starts a double whose prompts take `runMs` each (one at a time, as ComfyUI's worker); `hold`:
   * the first one waits for `release`; `holdPost`: its POST /prompt of that number lands only at `land`.
   */
  static async start(runMs: number, hold = false, holdPost = 0): Promise<DoubleProcess> {
    const dir = await mkdtemp(join(tmpdir(), "fg-double-"));
    await writeFile(join(dir, "object-info.json"), JSON.stringify(new EmbeddedEngine().nodeDefinitionsSync()));
    const d = new DoubleProcess(dir, runMs, hold, holdPost);
    await d.spawn();
    return d;
  }

  /** Lets the held prompt (see `start`) go on to its end. */
  release(): void {
    this.child?.kill("SIGUSR1");
  }

  /** The prompt id of the POST /prompt the double holds (see `start`), once one arrived. */
  get heldPost(): string | undefined {
    return /double holding POST \/prompt of (\S+)/.exec(this.out)?.[1];
  }

  /** Lets the held POST /prompt land (queued and answered); resolves once it did. */
  async land(): Promise<void> {
    this.child?.kill("SIGUSR2");
    await waitFor(
      () => this.out,
      (o) => o.includes("double landed POST /prompt"),
      "the held POST /prompt to land",
      30_000,
    );
  }

  private async spawn(): Promise<void> {
    const args = ["test/comfyui/double-process.ts", "--object-info", join(this.dir, "object-info.json"), "--log", this.logFile];
    if (this.hold) args.push("--hold");
    if (this.holdPost > 0) args.push("--hold-post", String(this.holdPost));
    this.hold = false;
    this.holdPost = 0;
    const child = spawn(process.execPath, [...args, "--port", String(this.port), "--run-ms", String(this.runMs)], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    this.out = "";
    child.stdout!.on("data", (d: Buffer) => (this.out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (this.out += d.toString()));
    const url = await waitFor(
      () => /double listening on (\S+)/.exec(this.out)?.[1] ?? (child.exitCode !== null ? "exited" : undefined),
      (u) => u !== undefined,
      "the ComfyUI double to listen",
      30_000,
    );
    if (url === "exited") throw new Error(`the ComfyUI double did not start:\n${this.out}`);
    this.url = url!;
    this.port = Number(new URL(this.url).port);
  }

  private get logFile(): string {
    return join(this.dir, "executions.jsonl");
  }

  /** Every execution start and end so far, across restarts. */
  async records(): Promise<ExecutionRecord[]> {
    const text = await readFile(this.logFile, "utf8").catch(() => "");
    return text
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as ExecutionRecord);
  }

  /** Its queue now (running and pending prompt ids). */
  async queue(): Promise<{ running: string[]; pending: string[] }> {
    const body = (await (await fetch(`${this.url}/queue`)).json()) as { queue_running: unknown[][]; queue_pending: unknown[][] };
    return { running: body.queue_running.map((e) => String(e[1])), pending: body.queue_pending.map((e) => String(e[1])) };
  }

  /** SIGKILLs it and starts it again on the same port: a ComfyUI restarted, its queue and history gone. */
  async restart(): Promise<void> {
    await this.kill();
    await this.spawn();
  }

  private async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const closed = new Promise((r) => child.once("close", r));
    child.kill("SIGKILL");
    await closed;
  }

  async stop(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Each job's end, its error's code and message when it failed. */
function endsOf(jobs: any[]): string {
  return jobs.map((j) => `${j.id.slice(-4)} ${j.status}${j.error ? ` ${j.error.code} ("${j.error.message}")` : ""}`).join(", ");
}

/** What one seed's run did, step by step (printed with a failure). */
export type Trace = string[];

/** A worker of the run and what happened to it. */
interface Worker {
  name: string;
  p: CliProcess;
  state: "live" | "killed" | "stopped" | "terminated";
}

const TERMINAL = ["succeeded", "failed", "canceled"];

/** Settings of the processes of a run. */
export interface OrdersSetup {
  d: FaultDeployment;
  /** The workers' lease (short: takeovers come soon). */
  leaseMs: number;
  /** The API node's lease (long: it never fails a job an adopter should take). */
  apiLeaseMs: number;
  /** Lists the queued jobs through the API node all along the schedule: no two of one answer share a place, and no job's place rises (PositionWatch). */
  positions?: boolean;
}

/**
 * Lists the queued jobs through an API node over and over until stopped: two queued jobs of one
 * answer at the same place, or a job's place rising from one answer to a later one, is a problem.
 */
class PositionWatch {
  readonly problems: string[] = [];
  polls = 0;
  private readonly last = new Map<string, number>();
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(api: Api) {
    this.loop = this.run(api);
  }

  private async run(api: Api): Promise<void> {
    while (!this.stopped) {
      const { body } = await api.get("/api/v2/jobs?status=queued&limit=100").catch(() => ({ body: null }));
      if (Array.isArray(body?.jobs)) {
        this.polls++;
        const places = new Map<number, string>();
        for (const job of body.jobs as { id: string; queue_position: number | null }[]) {
          const place = job.queue_position;
          if (place === null) continue;
          const other = places.get(place);
          if (other !== undefined) this.problems.push(`jobs ${other} and ${job.id} both at place ${place} in one answer`);
          places.set(place, job.id);
          const before = this.last.get(job.id);
          if (before !== undefined && place > before) this.problems.push(`job ${job.id} stepped back: place ${before}, then ${place}`);
          this.last.set(job.id, place);
        }
      }
      // The next answer once this one is read, a little apart: the schedule's processes share the machine.
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops listing; the problems seen. */
  async stop(): Promise<string[]> {
    this.stopped = true;
    await this.loop;
    return this.problems;
  }
}

/** A worker stopped between its lease renewal and its POST /prompt landing (see exploreOrder), and the job it was posting. */
interface StalePost {
  worker: Worker;
  jobId: string;
}

/**
 * Runs one seed's schedule and checks the invariants; throws with the seed and the trace when one
 * does not hold. The double's log counts each prompt's executions across its restarts. Returns the
 * documented windows the run met (a prompt run twice in one of them), each described.
 */
export async function exploreOrder(seed: number, setup: OrdersSetup): Promise<string[]> {
  const rnd = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const trace: Trace = [];
  const step = (s: string) => trace.push(`${new Date().toISOString()} ${s}`);
  const { d, leaseMs, apiLeaseMs } = setup;
  const runMs = 800 + Math.floor(rnd() * 1200);
  // Drawn apart, so that the schedules of the other choices stay those of earlier seeds. A holder
  // stopped at its POST: which POST the double holds (of the first two), when it lands (as the
  // holder's lease lapses, racing the adopter's look; or behind the adopter's own copy), and when
  // the holder goes on (once its POST landed; or once the prompt's first copy ended).
  const postRnd = seeded(seed ^ 0x51ed27);
  const heldPost = postRnd() < 0.35 ? 1 + Math.floor(postRnd() * 2) : 0;
  const landAt = postRnd() < 0.5 ? "lapse" : "behind";
  const goOnAt = postRnd() < 0.5 ? "landed" : "ran";
  // Or the holder is SIGTERMed while its POST is held: it hands the job over once the POST landed.
  const termAtPost = heldPost > 0 && seeded(seed ^ 0x2f1a9b)() < 0.3;
  const duringTakeover = heldPost === 0 && seeded(seed ^ 0x7a4e0c3)() < 0.4;
  const double = await DoubleProcess.start(runMs, duringTakeover, heldPost);
  let released = !duringTakeover;
  const release = (when: string) => {
    if (released) return;
    released = true;
    double.release();
    step(`the double finishes the held prompt ${when}`);
  };
  let restartedAt: number | null = null;
  const workers: Worker[] = [];
  let watch: PositionWatch | null = null;
  try {
    const flags = () => comfyFlags(double.url);
    const { api } = await d.apiNode({ leaseMs: apiLeaseMs, flags: flags() });
    if (setup.positions) watch = new PositionWatch(api);
    const addWorker = async (why: string) => {
      const w: Worker = { name: `w${workers.length + 1}`, p: await d.worker({ leaseMs, flags: flags() }), state: "live" };
      workers.push(w);
      step(`${w.name} (pid ${w.p.child.pid}) started ${why}`);
      return w;
    };
    let stale: StalePost | null = null;
    /** The job whose POST /prompt the double holds, once one arrived, and the worker holding it. */
    const holderOfHeldPost = async (): Promise<{ id: string; w: Worker }> => {
      const id = (await waitFor(
        () => double.heldPost,
        (x) => x !== undefined,
        "the double to hold a POST /prompt",
        30_000,
      ))!;
      const row = await d.job(id);
      const w = workers.find((x) => String(row.worker_id).includes(`:${x.p.child.pid}:`));
      if (!w) throw new Error(`no worker of this run holds job ${id}, whose POST /prompt the double holds`);
      return { id, w };
    };
    /** The jobs a worker holds now. */
    const jobsOf = async (w: Worker): Promise<string[]> => {
      const theirs: string[] = [];
      for (const j of jobs) if (String((await d.job(j)).worker_id).includes(`:${w.p.child.pid}:`)) theirs.push(j);
      return theirs;
    };
    /** Waits until each of `theirs` ended or another worker than `w` holds it. */
    const takenOverOrEnded = (w: Worker, theirs: readonly string[]) =>
      waitFor(
        () => Promise.all(theirs.map((j) => d.job(j))),
        (rs) => rs.every((r) => TERMINAL.includes(String(r.status)) || !String(r.worker_id).includes(`:${w.p.child.pid}:`)),
        `the jobs of ${w.name} taken over or ended`,
        60_000,
      );
    /**
     * The holder of the job whose POST /prompt the double holds is SIGTERMed there: its stop waits
     * for the POST's answer, then hands the job over (it takes nothing back out of the double); the
     * POST lands once the stop is under way, and another worker follows the prompt.
     */
    const termAtPostHeld = async (n: number): Promise<void> => {
      const { id, w } = await holderOfHeldPost();
      const theirs = await jobsOf(w);
      step(`${w.name} SIGTERMed while the double holds its POST /prompt ${n} (job ${id.slice(-4)})`);
      if (!workers.some((x) => x !== w && x.state === "live")) await addWorker("to take over from the worker stopping at its POST");
      const closed = new Promise((r) => w.p.child.once("close", r));
      w.p.child.kill("SIGTERM");
      w.state = "terminated";
      await waitFor(
        () => w.p.stderr(),
        (e) => e.includes(`job ${id}: this process stops`),
        `${w.name}'s stop to hand job ${id} over`,
        30_000,
      );
      await double.land();
      step(`the stopping worker's POST /prompt landed; double queue ${JSON.stringify(await double.queue())}`);
      await closed;
      await takenOverOrEnded(w, theirs);
      step(`${w.name} exited; its jobs taken over or ended`);
    };
    /**
     * The holder of the job whose POST /prompt the double holds is stopped there (after its lease
     * renewal, before its POST landed); once its lease lapsed the POST lands (then, racing the
     * adopter's look at the double; or behind the adopter's own copy), and the holder goes on
     * (once it landed; or once the prompt's first copy ended, the stale copy then maybe started).
     */
    const stopAtPost = async (n: number, land: "lapse" | "behind", goOn: "landed" | "ran"): Promise<StalePost> => {
      const { id, w } = await holderOfHeldPost();
      w.p.child.kill("SIGSTOP");
      w.state = "stopped";
      const theirs = await jobsOf(w);
      step(
        `${w.name} stopped between its lease renewal and its POST /prompt ${n} (job ${id.slice(-4)}) landing; it lands ${land === "lapse" ? "as the lease lapses" : "behind the new holder's copy"}, and ${w.name} goes on once ${goOn === "landed" ? "it landed" : "the prompt's first copy ended"}`,
      );
      if (!workers.some((x) => x.state === "live")) await addWorker("to take over from the worker stopped at its POST");
      await waitFor(
        () => adminQuery(`SELECT lease_until < (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS lapsed FROM ${d.schema}.jobs WHERE id = $1`, [id]),
        (rows) => rows[0]?.lapsed === true,
        `the lease of ${w.name} on the job to lapse`,
        60_000,
      );
      if (land === "behind") {
        await waitFor(
          async () => ({ r: await d.job(id), q: await double.queue() }),
          ({ r, q }) => TERMINAL.includes(String(r.status)) || q.running.includes(id) || q.pending.includes(id),
          "the new holder's copy of the prompt in the double",
          60_000,
        );
      }
      await double.land();
      step(`the stopped worker's POST /prompt landed; double queue ${JSON.stringify(await double.queue())}`);
      if (goOn === "ran") {
        await waitFor(
          () => double.records(),
          (rs) => rs.some((r) => r.type === "end" && r.promptId === id),
          "the prompt's first copy to end",
          60_000,
        );
      }
      // As after any stop past the lease here: it goes on once its jobs were taken over (or ended).
      await takenOverOrEnded(w, theirs);
      w.p.child.kill("SIGCONT");
      w.state = "live";
      step(`${w.name} continued`);
      return { worker: w, jobId: id };
    };
    const adopterFirst = rnd() < 0.5;
    step(
      `seed ${seed}: prompts take ${runMs} ms; the second worker starts ${adopterFirst ? "before" : "after"} the prompts${duringTakeover ? "; the first prompt is held until the takeover" : ""}${heldPost > 0 ? `; POST /prompt ${heldPost} is held${termAtPost ? " and its worker SIGTERMed" : ""}` : ""}`,
    );
    await addWorker("first");
    if (adopterFirst) await addWorker("before the jobs");
    const jobs: string[] = [];
    for (let i = 0; i < 4; i++) jobs.push((await api.submit(textGraph(`orders-${seed}-${i}`))).id);
    step(`submitted ${jobs.length} jobs`);
    if (heldPost > 0 && termAtPost) await termAtPostHeld(heldPost);
    else if (heldPost > 0) stale = await stopAtPost(heldPost, landAt, goOnAt);
    await waitFor(
      async () => ({ q: await double.queue(), rows: await Promise.all(jobs.map((id) => d.job(id))) }),
      ({ q, rows }) => q.running.length > 0 || rows.every((r) => TERMINAL.includes(String(r.status))),
      "a prompt running in the double",
      30_000,
    );
    if (!adopterFirst) await addWorker("after the prompts reached the double");

    const rounds = rnd() < 0.4 ? 2 : 1;
    const restartRound = rnd() < 0.25 ? Math.floor(rnd() * rounds) : -1;
    for (let round = 0; round < rounds; round++) {
      const live = workers.filter((w) => w.state === "live");
      // Where the prompts are: the holder of the running one, or any live worker holding jobs.
      const rows = await Promise.all(jobs.map((id) => d.job(id)));
      const holds = (w: Worker, r: Record<string, unknown>) => String(r.worker_id).includes(`:${w.p.child.pid}:`) && !TERMINAL.includes(String(r.status));
      const q = await double.queue();
      const runningHolder = live.find((w) => rows.some((r, i) => holds(w, r) && q.running.includes(jobs[i]!)));
      const holding = live.filter((w) => rows.some((r) => holds(w, r)));
      const victim = runningHolder && rnd() < 0.7 ? runningHolder : holding.length > 0 ? pick(holding) : null;
      if (!victim) {
        step(`round ${round + 1}: no live worker holds a job; nothing to signal`);
        break;
      }
      const how = pick(["SIGKILL", "SIGSTOP", "SIGTERM"] as const);
      const theirs = jobs.filter((_, i) => holds(victim, rows[i]!));
      // Someone must be left to take over: a new worker, started before the signal, after it, or
      // (a SIGKILL) only once the double finished everything while nobody watched.
      const alone = live.length === 1;
      const adopter = alone ? pick(how === "SIGKILL" ? (["before", "after", "unwatched"] as const) : (["before", "after"] as const)) : null;
      if (adopter === "before") await addWorker("to take over (before the signal)");
      step(
        `round ${round + 1}: ${how} ${victim.name} holding ${theirs.length} job(s) (${theirs.map((id) => id.slice(-4)).join(",")}); double queue ${JSON.stringify({ running: q.running.length, pending: q.pending.length })}`,
      );
      if (how === "SIGKILL") {
        const closed = new Promise((r) => victim.p.child.once("close", r));
        victim.p.child.kill("SIGKILL");
        await closed;
        victim.state = "killed";
      } else if (how === "SIGTERM") {
        const closed = new Promise((r) => victim.p.child.once("close", r));
        victim.p.child.kill("SIGTERM");
        await closed;
        victim.state = "terminated";
      } else {
        victim.p.child.kill("SIGSTOP");
        victim.state = "stopped";
      }
      // The held prompt finishes during the takeover: once its holder's lease lapsed, while an
      // adopter takes the job over (or before it looks at the double).
      const heldJob = q.running[0];
      if (!released && (adopter === "unwatched" || heldJob === undefined || !theirs.includes(heldJob))) release("right after the signal");
      else if (!released) {
        // Lapsed, or already taken over (an adopter may take it between two reads of this poll).
        const [lease] = await waitFor(
          () =>
            adminQuery(`SELECT lease_until < (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS lapsed, worker_id FROM ${d.schema}.jobs WHERE id = $1`, [
              heldJob,
            ]),
          (rows) => rows[0]?.lapsed === true || !String(rows[0]?.worker_id).includes(`:${victim.p.child.pid}:`),
          "the lease of the held prompt's job to lapse",
          60_000,
        );
        release(lease?.lapsed === true ? "between its holder's lease lapsing and the takeover" : "right after the takeover");
      }
      if (adopter === "unwatched") {
        await waitFor(
          () => double.queue(),
          (q) => q.running.length + q.pending.length === 0,
          "the double to finish every prompt while nobody watched",
          60_000,
        );
        step("the double finished every prompt while no worker was alive");
      }
      if (adopter !== null && adopter !== "before") await addWorker("to take over (after the signal)");
      if (round === restartRound) {
        restartedAt = Date.now();
        await double.restart();
        step("the double restarted: its queue and history are gone");
      }
      // The victim's jobs are taken over (or end) before the next step.
      await takenOverOrEnded(victim, theirs);
      step(`round ${round + 1}: ${victim.name}'s jobs taken over or ended`);
      if (victim.state === "stopped") {
        victim.p.child.kill("SIGCONT");
        victim.state = "live";
        step(`${victim.name} continued`);
      }
    }

    release("after the rounds");
    const ended = [];
    for (const id of jobs) ended.push(await api.waitJob(id, (j) => TERMINAL.includes(j.status), `job ${id} to end`, 120_000));
    step(`every job ended: ${endsOf(ended)}`);
    if (watch) {
      const wrong = await watch.stop();
      step(`positions listed ${watch.polls} times during the schedule`);
      if (wrong.length > 0) throw new Error(`queue positions:\n${wrong.slice(0, 20).join("\n")}`);
    }
    const windows = await checkInvariants(
      ended,
      await double.records(),
      restartedAt,
      d,
      stale === null ? undefined : { jobId: stale.jobId, log: stale.worker.p.stderr() },
    );
    if (process.env.EXPLORE_ORDERS_TRACE || windows.length > 0) console.log(trace.join("\n"));
    return windows.map((w) => `seed ${seed}: ${w}`);
  } catch (err) {
    for (const w of workers) {
      const said = w.p
        .stderr()
        .split("\n")
        .filter((l) => l.includes("job "));
      if (said.length > 0) step(`${w.name} logged:\n  ${said.join("\n  ")}`);
    }
    throw new Error(
      `orders seed ${seed} failed (replay: EXPLORE_ORDERS_SEED=${seed} npx vitest run test/comfyui/orders.test.ts):\n${(err as Error).message}\n${trace.join("\n")}`,
      {
        cause: err,
      },
    );
  } finally {
    await watch?.stop();
    for (const w of workers) if (w.state === "stopped") w.p.child.kill("SIGCONT");
    await double.stop();
  }
}

/**
 * One seed of a single `serve --engine comfyui` on SQLite, SIGKILLed mid-run and started again on
 * the same data directory: killed while a prompt runs (after 0 to 2 prompts ended), then, while it
 * is down, the double finishes nothing more, one prompt or every prompt; the restarted front
 * follows, collects or submits each job's prompt. The same invariants, without the PostgreSQL
 * history.
 */
export async function exploreSqliteFront(seed: number): Promise<void> {
  const rnd = seeded(seed);
  const trace: Trace = [];
  const step = (s: string) => trace.push(`${new Date().toISOString()} ${s}`);
  const runMs = 500 + Math.floor(rnd() * 1000);
  const endedBefore = Math.floor(rnd() * 3);
  const whileDown = (["nothing", "one", "all"] as const)[Math.floor(rnd() * 3)]!;
  const double = await DoubleProcess.start(runMs);
  const dataDir = await mkdtemp(join(tmpdir(), "fg-orders-sqlite-"));
  const flags = [
    "--data-dir",
    dataDir,
    "--port",
    "0",
    "--engine",
    "comfyui",
    "--comfyui-url",
    double.url,
    "--comfyui-output-dir",
    "off",
    "--shutdown-grace",
    "0",
  ];
  let front: CliServer | null = null;
  const ends = async () => (await double.records()).filter((r) => r.type === "end").length;
  try {
    step(`seed ${seed} (SQLite front): prompts take ${runMs} ms; killed after ${endedBefore} prompt(s) ended; while down the double finishes ${whileDown}`);
    front = await spawnCli(flags);
    let api = new Api(front.url);
    const jobs: string[] = [];
    for (let i = 0; i < 4; i++) jobs.push((await api.submit(textGraph(`orders-sqlite-${seed}-${i}`))).id);
    step(`submitted ${jobs.length} jobs`);
    await waitFor(
      async () => ({ ended: await ends(), q: await double.queue() }),
      ({ ended, q }) => ended >= endedBefore && q.running.length > 0,
      `${endedBefore} prompt(s) ended and another running`,
      60_000,
    );
    const q = await double.queue();
    const child = front.child;
    const closed = new Promise((r) => child.once("close", r));
    child.kill("SIGKILL");
    await closed;
    front = null;
    step(`SIGKILL of the front; double queue ${JSON.stringify({ running: q.running.length, pending: q.pending.length })}`);
    if (whileDown !== "nothing") {
      const target = whileDown === "all" ? null : (await ends()) + 1;
      await waitFor(
        async () => ({ ended: await ends(), q: await double.queue() }),
        ({ ended, q }) => (target === null ? q.running.length + q.pending.length === 0 : ended >= target),
        "the double to finish prompts while the front is down",
        60_000,
      );
      step(`the double finished ${whileDown === "all" ? "every prompt" : "one prompt"} while the front was down`);
    }
    front = await spawnCli(flags);
    api = new Api(front.url);
    step("the front started again on its data directory");
    const ended = [];
    for (const id of jobs) ended.push(await api.waitJob(id, (j) => TERMINAL.includes(j.status), `job ${id} to end`, 120_000));
    step(`every job ended: ${endsOf(ended)}`);
    await checkInvariants(ended, await double.records(), null);
    if (process.env.EXPLORE_ORDERS_TRACE) console.log(trace.join("\n"));
  } catch (err) {
    if (front)
      step(
        `the front logged:\n  ${front
          .output()
          .split("\n")
          .filter((l) => l.includes("job "))
          .join("\n  ")}`,
      );
    throw new Error(
      `orders (SQLite front) seed ${seed} failed (replay: EXPLORE_ORDERS_SEED=${seed} npx vitest run test/comfyui/orders.test.ts):\n${(err as Error).message}\n${trace.join("\n")}`,
      { cause: err },
    );
  } finally {
    if (front) {
      const child = front.child;
      const closed = new Promise((r) => child.once("close", r));
      child.kill("SIGKILL");
      await closed;
    }
    await double.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The stale worker's own words (see ComfyUIEngine.withdraw) for the two windows docs/comfyui.md names. */
const STALE_STARTED = "its prompt was posted after this worker lost the job; ComfyUI started it already: it runs a second time";
const STALE_ALONE = "its prompt was posted after this worker lost the job; it is the only copy ComfyUI holds, left to the process holding the job";
const STALE_STOPPED = "its prompt was posted after this worker lost the job; the job ended meanwhile: its prompt was stopped in ComfyUI";

/**
 * Whether a job's second execution is one of the windows docs/comfyui.md names, and which: the
 * job is the one whose POST the worker stopped at its POST sent (`stale`), ComfyUI ran its prompt
 * exactly twice, and either that worker found the stale copy started already when it looked (and
 * left it, or stopped it as the job had ended meanwhile), or it found its copy alone and the new holder's copy landed after it (the new holder asked before
 * the stale POST landed). Anything else run twice is a failure.
 */
function documentedWindow(jobId: string, mine: ExecutionRecord[], stale: { jobId: string; log: string } | undefined): string | null {
  if (!stale || stale.jobId !== jobId || mine.filter((r) => r.type === "start").length !== 2) return null;
  // Its copy had started when it looked: left to run, or (the job ended meanwhile) interrupted.
  const stopped = mine.filter((r) => r.type === "end").at(-1)?.status === "interrupted";
  if (stale.log.includes(`job ${jobId}: ${STALE_STARTED}`) || (stopped && stale.log.includes(`job ${jobId}: ${STALE_STOPPED}`)))
    return `job ${jobId}: executed twice in the documented window "a copy ComfyUI started before the stale worker could take it back"`;
  const landed = mine.filter((r) => r.type === "queued");
  const heldAt = landed.find((r) => r.held)?.at;
  if (stale.log.includes(`job ${jobId}: ${STALE_ALONE}`) && heldAt !== undefined && landed.some((r) => !r.held && r.at > heldAt))
    return `job ${jobId}: executed twice in the documented window "a new holder that asked before the stale POST landed and posted after the stale worker looked"`;
  return null;
}

/**
 * Whether a job's prompt ran twice because the double, restarted, forgot its first run (queue and
 * history gone): that run started before the restart, while no process followed it, and ended
 * before it or was cut short by it (its job, still queued, was taken over and the prompt found
 * nowhere, so submitted again), and the second started after it. docs/comfyui.md names this case.
 */
function forgottenRun(jobId: string, mine: ExecutionRecord[], restartedAt: number | null): string | null {
  const starts = mine.filter((r) => r.type === "start");
  if (restartedAt === null || starts.length !== 2 || starts[0]!.at >= restartedAt || starts[1]!.at <= restartedAt) return null;
  // The first run's end, if it had one before the restart; none after it but the second run's.
  const ends = mine.filter((r) => r.type === "end");
  if (ends.some((r) => r.at > restartedAt && r.at < starts[1]!.at)) return null;
  const cut = !ends.some((r) => r.at < restartedAt);
  return `job ${jobId}: executed twice, its first run (that nobody followed) ${cut ? "cut short" : "forgotten"} by the double's restart (documented: a job still queued is submitted again)`;
}

/**
 * For every job: its prompt executed at most once, and exactly once when it succeeded; its end
 * state is the double's (a success there is a success here, unless the double forgot it in a
 * restart); a succeeded job's run times are the double's within 1 s; one output record per
 * succeeded job, none written by a process that lost its lease (the status and output history,
 * on PostgreSQL: `d`). A prompt run twice in a documented window (`stale`: the job of the worker
 * stopped at its POST, and what that worker logged; see documentedWindow) is returned as such,
 * its other invariants still checked (its times those of one of its executions).
 */
async function checkInvariants(
  jobs: any[],
  records: ExecutionRecord[],
  restartedAt: number | null,
  d?: FaultDeployment,
  stale?: { jobId: string; log: string },
): Promise<string[]> {
  const problems: string[] = [];
  const windows: string[] = [];
  for (const job of jobs) {
    const mine = records.filter((r) => r.promptId === job.id);
    const starts = mine.filter((r) => r.type === "start");
    const ends = mine.filter((r) => r.type === "end");
    const end = ends[0];
    const tag = `job ${job.id} (${job.status}${job.error ? ` ${job.error.code}` : ""})`;
    const window = documentedWindow(job.id, mine, stale) ?? forgottenRun(job.id, mine, restartedAt);
    if (window) windows.push(window);
    else if (starts.length > 1) problems.push(`${tag}: its prompt executed ${starts.length} times`);
    if (job.status === "succeeded") {
      if (starts.length !== (window ? 2 : 1) || end?.status !== "success")
        problems.push(`${tag}: succeeded, but the double's record is ${JSON.stringify(mine)}`);
      else {
        const off = (iso: string, at: number) => Math.abs(Date.parse(iso) - at);
        if (!starts.some((s) => off(job.started_at, s.at) <= 1000))
          problems.push(`${tag}: started_at ${job.started_at}, the double started it at ${starts.map((s) => new Date(s.at).toISOString()).join(" and ")}`);
        if (!ends.some((e) => off(job.completed_at, e.at) <= 1000))
          problems.push(`${tag}: completed_at ${job.completed_at}, the double ended it at ${ends.map((e) => new Date(e.at).toISOString()).join(" and ")}`);
      }
      if (job.outputs.length !== 1) problems.push(`${tag}: ${job.outputs.length} outputs`);
      if (d && (await d.outputs(job.id)).length !== 1) problems.push(`${tag}: ${(await d.outputs(job.id)).length} output records`);
    } else if (end?.status === "success") {
      // The double succeeded: only its restart (history lost before anyone collected it) excuses another end.
      const forgotten = restartedAt !== null && end.at < restartedAt && job.status === "failed" && job.error?.code === "worker_lost";
      if (!forgotten) problems.push(`${tag}: the double ran its prompt to success`);
    }
    if (job.status === "failed" && starts.length === 0 && !job.error?.message) problems.push(`${tag}: never executed, and its error does not say why`);
  }
  for (const v of d ? await d.violations() : []) problems.push(v);
  if (problems.length > 0) throw new Error(problems.join("\n"));
  return windows;
}

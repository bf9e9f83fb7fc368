// The live progress of `flowgate run`: a one-line bar redrawn in place on a terminal, plain
// lines otherwise (logs, CI, pipes). Both show node, step, percent, elapsed and remaining time;
// the percent and time left go by work (work-estimate.ts), not by the contract's node count.
import { type Job, type JobStatus, type Progress, TERMINAL_STATUSES } from "../client/types.ts";
import { WorkEstimate } from "./work-estimate.ts";

/** How progress is shown: `bar` (terminal), `plain` (a line per change), `none`. */
export type ProgressMode = "bar" | "plain" | "none";

/** Everything one rendering shows. */
export interface ProgressSnapshot {
  status: JobStatus;
  progress: Progress | null;
  /** The fraction of work done, 0 to 1 (the CLI's own, not `progress.value`). */
  fraction: number;
  queuePosition: number | null;
  elapsedMs: number;
  /** null until an estimate exists. */
  remainingMs: number | null;
}

/** `m:ss`, or `h:mm:ss` from an hour on. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

function percentOf(s: ProgressSnapshot): number {
  return Math.floor(Math.min(1, Math.max(0, s.fraction)) * 100);
}

/** `node 2 FlowgateSampler  step 5/20`, or "" between nodes. */
function nodeText(p: Progress | null, withClass = true): string {
  if (!p?.current_node) return "";
  const parts = [`node ${p.current_node}${withClass && p.current_node_class ? ` ${p.current_node_class}` : ""}`];
  if (p.step !== null && p.step !== undefined && p.steps) parts.push(`step ${p.step}/${p.steps}`);
  return parts.join("  ");
}

function statusText(s: ProgressSnapshot): string {
  return s.status === "queued" && s.queuePosition !== null ? `queued #${s.queuePosition}` : s.status;
}

function timeText(s: ProgressSnapshot): string {
  return `${formatDuration(s.elapsedMs)} elapsed${s.remainingMs !== null ? `  ~${formatDuration(s.remainingMs)} left` : ""}`;
}

/** The one-line bar: `running [#####.....]  50%  node 1 FlowgateSampler  step 10/20  0:03 elapsed  ~0:03 left`, fitted to `columns`. */
export function renderBar(s: ProgressSnapshot, columns = 80): string {
  const percent = percentOf(s);
  const head = statusText(s);
  // On a narrow terminal the node's class goes first, then the line is cut.
  const variants = [nodeText(s.progress), nodeText(s.progress, false)].map((node) =>
    [`${String(percent).padStart(3)}%`, ...(node ? [node] : []), timeText(s)].join("  "),
  );
  const fixed = head.length + 5; // " [" + "]  " around the bar
  const rest = variants.find((r) => fixed + 10 + r.length <= columns - 1) ?? variants[variants.length - 1]!;
  // The bar takes what the text leaves, between 10 and 30 cells.
  const width = Math.max(10, Math.min(30, columns - 1 - fixed - rest.length));
  const filled = Math.round((percent / 100) * width);
  const line = `${head} [${"#".repeat(filled)}${".".repeat(width - filled)}]  ${rest}`;
  return line.length > columns - 1 ? `${line.slice(0, Math.max(0, columns - 2))}…` : line;
}

/** One plain line: `[0:03] running 50% node 1 FlowgateSampler step 10/20, ~0:03 left`. */
export function plainLine(s: ProgressSnapshot): string {
  const node = nodeText(s.progress);
  const left = s.remainingMs !== null ? `, ~${formatDuration(s.remainingMs)} left` : "";
  return `[${formatDuration(s.elapsedMs)}] ${statusText(s)} ${percentOf(s)}%${node ? ` ${node.replace("  ", " ")}` : ""}${left}`;
}

/** A writable the view draws on (stderr). */
export interface ViewOutput {
  write(text: string): unknown;
  columns?: number;
}

/** Follows a job's status and progress and draws them. */
export class ProgressView {
  private readonly out: ViewOutput;
  private readonly mode: ProgressMode;
  private readonly now: () => number;
  private readonly startedAt: number;
  private runningSince: number | null = null;
  private status: JobStatus = "queued";
  private queuePosition: number | null = null;
  private progressValue: Progress | null = null;
  private readonly work = new WorkEstimate();
  private drawn = false;
  private lastPlain = "";
  private ticker: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(out: ViewOutput, mode: ProgressMode, now: () => number = Date.now) {
    this.out = out;
    this.mode = mode;
    this.now = now;
    this.startedAt = now();
    // On a terminal the clock keeps moving between events.
    if (mode === "bar") {
      this.ticker = setInterval(() => this.drawn && this.draw(), 1000);
      this.ticker.unref();
    }
  }

  /** A job reading (status event or poll). */
  job(job: Job): void {
    this.status = job.status;
    this.queuePosition = job.queue_position;
    if (job.progress) this.progressValue = job.progress;
    this.work.observe(job.progress ?? null, this.now());
    this.draw();
  }

  /** A progress snapshot. */
  progress(progress: Progress): void {
    this.progressValue = progress;
    this.work.observe(progress, this.now());
    if (this.status === "queued") this.status = "running";
    this.draw();
  }

  /** Prints a message above the bar (or as a line). */
  note(text: string): void {
    if (this.mode === "none") return;
    const redraw = this.drawn;
    this.clear();
    this.out.write(`${text}\n`);
    if (redraw) this.draw();
  }

  /** Stops redrawing for good (events still in flight draw nothing) and leaves the last state on screen. */
  stop(): void {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    if (this.mode === "bar" && this.drawn) this.out.write("\n");
    this.drawn = false;
  }

  /** The state as it would be drawn now. */
  snapshot(): ProgressSnapshot {
    const now = this.now();
    if (this.runningSince === null && this.status !== "queued") this.runningSince = now;
    const done = TERMINAL_STATUSES.includes(this.status);
    const work = this.work.read(this.progressValue, this.status, now);
    const remainingMs = done ? null : work.byWork ? work.remainingMs : this.byNodeCount(now);
    return {
      status: this.status,
      progress: this.progressValue,
      fraction: work.fraction,
      queuePosition: this.queuePosition,
      elapsedMs: now - this.startedAt,
      remainingMs,
    };
  }

  /** Time left for a run with no stepped node: the running time scaled by the node-count fraction. */
  private byNodeCount(now: number): number | null {
    const value = this.progressValue?.value ?? 0;
    const running = this.runningSince === null ? 0 : now - this.runningSince;
    // No estimate before a second of running (early fractions say little about the rest), nor while
    // the current node reports no steps: the fraction stands still while it runs, and the estimate would only grow.
    const stepless = !!this.progressValue?.current_node && !this.progressValue.steps;
    return stepless || running < 1000 || value < 0.01 || value >= 1 ? null : (running * (1 - value)) / value;
  }

  private draw(): void {
    // After a stop the lines that follow (Ctrl-C's, the job's end) must not share a line with a redrawn bar.
    if (this.mode === "none" || this.stopped) return;
    const s = this.snapshot();
    if (this.mode === "bar") {
      this.out.write(`\r\x1b[2K${renderBar(s, this.out.columns || 80)}`);
      this.drawn = true;
      return;
    }
    // Plain: a line when the status or node changes, or the percent crosses a tenth.
    const key = `${statusText(s)}|${s.progress?.current_node ?? ""}|${Math.floor(percentOf(s) / 10)}`;
    if (key === this.lastPlain) return;
    this.lastPlain = key;
    this.out.write(`${plainLine(s)}\n`);
  }

  private clear(): void {
    if (this.mode === "bar" && this.drawn) this.out.write("\r\x1b[2K");
    this.drawn = false;
  }
}

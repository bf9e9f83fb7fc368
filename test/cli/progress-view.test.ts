// The progress rendering of `flowgate run`: the bar, the plain lines, and time estimates.
import { describe, expect, it } from "vitest";
import { formatDuration, plainLine, ProgressView, renderBar, type ProgressSnapshot } from "../../src/cli/progress-view.ts";
import type { Job, Progress } from "../../src/index.ts";

const progress = (value: number, extra: Partial<Progress> = {}): Progress => ({
  value,
  nodes_done: 0,
  nodes_total: 2,
  current_node: "1",
  current_node_class: "FlowgateSampler",
  step: 10,
  steps: 20,
  message: null,
  ...extra,
});
const snap = (s: Partial<ProgressSnapshot>): ProgressSnapshot => ({
  status: "running",
  progress: null,
  queuePosition: null,
  elapsedMs: 0,
  remainingMs: null,
  ...s,
});

describe("rendering", () => {
  it("formats durations as m:ss and h:mm:ss", () => {
    expect(formatDuration(0)).toBe("0:00");
    expect(formatDuration(65_400)).toBe("1:05");
    expect(formatDuration(3_723_000)).toBe("1:02:03");
  });

  it("the bar shows status, fill, percent, node, step, elapsed and remaining", () => {
    const line = renderBar(snap({ progress: progress(0.5), elapsedMs: 3000, remainingMs: 3000 }), 120);
    expect(line).toMatch(/^running \[#+\.+\] {3}50% {2}node 1 FlowgateSampler {2}step 10\/20 {2}0:03 elapsed {2}~0:03 left$/);
    const bar = /\[(#*)(\.*)\]/.exec(line)!;
    expect(bar[1]!.length).toBe(bar[2]!.length);
  });

  it("fits a narrow terminal: the node's class goes first, then the line is cut", () => {
    const s = snap({ progress: progress(0.5), elapsedMs: 3000, remainingMs: 3000 });
    const medium = renderBar(s, 80);
    expect(medium.length).toBeLessThanOrEqual(79);
    expect(medium).toContain("node 1  step 10/20");
    expect(medium).not.toContain("FlowgateSampler");
    const tiny = renderBar(s, 30);
    expect(tiny.length).toBeLessThanOrEqual(29);
    expect(tiny.endsWith("…")).toBe(true);
  });

  it("a queued job shows its position", () => {
    expect(renderBar(snap({ status: "queued", queuePosition: 2 }))).toMatch(/^queued #2 \[\.+\] {4}0% {2}0:00 elapsed$/);
    expect(plainLine(snap({ status: "queued", queuePosition: 0 }))).toBe("[0:00] queued #0 0%");
  });

  it("plain lines carry the same facts", () => {
    expect(plainLine(snap({ progress: progress(0.25, { step: 5 }), elapsedMs: 61_000, remainingMs: 120_000 }))).toBe(
      "[1:01] running 25% node 1 FlowgateSampler step 5/20, ~2:00 left",
    );
  });
});

describe("ProgressView", () => {
  function job(status: Job["status"], p: Progress | null = null): Job {
    return { status, progress: p, queue_position: status === "queued" ? 0 : null } as Job;
  }

  it("estimates the time left from the running time and the fraction done", () => {
    let now = 1_000_000;
    const out: string[] = [];
    const view = new ProgressView({ write: (t) => out.push(t) }, "plain", () => now);
    view.job(job("queued"));
    now += 2000;
    view.job(job("running", progress(0)));
    now += 4000;
    view.progress(progress(0.25));
    const s = view.snapshot();
    expect(s.elapsedMs).toBe(6000);
    expect(s.remainingMs).toBe(12_000);
    expect(out.at(-1)).toBe("[0:06] running 25% node 1 FlowgateSampler step 10/20, ~0:12 left\n");
    view.job(job("succeeded", progress(1)));
    expect(view.snapshot().remainingMs).toBeNull();
  });

  it("shows no estimate while the current node reports no steps (its fraction stands still)", () => {
    let now = 1_000_000;
    const view = new ProgressView({ write: () => undefined }, "plain", () => now);
    view.job(job("running", progress(0)));
    now += 3000;
    view.progress(progress(1 / 3, { current_node: "2", current_node_class: "FlowgateDelay", step: null, steps: null }));
    expect(view.snapshot().remainingMs).toBeNull();
    now += 30_000;
    expect(view.snapshot().remainingMs).toBeNull();
    expect(plainLine(view.snapshot())).not.toContain("left");
    view.progress(progress(0.5));
    expect(view.snapshot().remainingMs).not.toBeNull();
  });

  it("plain mode prints a line per status, node or tenth of progress, not per event", () => {
    const out: string[] = [];
    const view = new ProgressView({ write: (t) => out.push(t) }, "plain", () => 0);
    view.job(job("running", progress(0.1)));
    view.progress(progress(0.12, { step: 11 }));
    view.progress(progress(0.15, { step: 12 }));
    view.progress(progress(0.21, { step: 13 }));
    view.progress(progress(0.22, { current_node: "2", current_node_class: "SaveImage", step: null, steps: null }));
    expect(out).toHaveLength(3);
  });

  it("bar mode redraws in place and ends with a newline", () => {
    const out: string[] = [];
    const view = new ProgressView({ write: (t) => out.push(t), columns: 100 }, "bar", () => 0);
    view.job(job("running", progress(0.5)));
    view.note("a message");
    view.stop();
    expect(out[0]!.startsWith("\r\x1b[2K")).toBe(true);
    expect(out).toContain("a message\n");
    expect(out.at(-1)).toBe("\n");
  });

  it("draws nothing after stop: events still in flight after Ctrl-C leave the last line its own", () => {
    const out: string[] = [];
    const view = new ProgressView({ write: (t) => out.push(t), columns: 100 }, "bar", () => 0);
    view.job(job("running", progress(0.5)));
    view.stop();
    const written = out.length;
    view.progress(progress(0.6));
    view.job(job("canceling", progress(0.6)));
    expect(out).toHaveLength(written);
    view.note("job x canceled");
    expect(out.slice(written)).toEqual(["job x canceled\n"]);
  });
});

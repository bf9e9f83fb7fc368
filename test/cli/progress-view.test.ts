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
  fraction: s.progress?.value ?? 0,
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

  // A loader, a sampler and a save: what `flowgate run` showed as 45% at step 7357/8000.
  const loader = (value = 0): Progress =>
    progress(value, { nodes_done: 0, nodes_total: 3, current_node: "1", current_node_class: "LoadImage", step: null, steps: null });
  const sampler = (step: number): Progress =>
    progress((1 + step / 8000) / 3, { nodes_done: 1, nodes_total: 3, current_node: "2", current_node_class: "KSampler", step, steps: 8000 });
  const save = (): Progress => progress(2 / 3, { nodes_done: 2, nodes_total: 3, current_node: "3", current_node_class: "SaveImage", step: null, steps: null });

  it("goes by work: a sampler's steps at their observed rate, not the contract's node count", () => {
    let now = 1_000_000;
    const out: string[] = [];
    const view = new ProgressView({ write: (t) => out.push(t) }, "plain", () => now);
    view.job(job("queued"));
    view.job(job("running", loader()));
    now += 1000; // the loader took 1 s
    view.progress(sampler(0));
    for (let step = 100; step <= 7300; step += 100) {
      now += 1000; // 10 ms a step
      view.progress(sampler(step));
    }
    now += 570;
    view.progress(sampler(7357));
    const s = view.snapshot();
    expect(s.progress!.value).toBeCloseTo((1 + 7357 / 8000) / 3); // the contract's value, passed on untouched
    // Done: the loader's 1 s and 7357 steps; left: 643 steps and the save, weighed as the loader was.
    expect(s.remainingMs).toBe(643 * 10 + 1000);
    expect(s.fraction).toBeCloseTo((1000 + 73_570) / (1000 + 80_000 + 1000), 3);
    expect(plainLine(s)).toBe("[1:15] running 90% node 2 KSampler step 7357/8000, ~0:07 left");
    expect(out.at(-1)).toMatch(/ running 90% node 2 KSampler step \d+\/8000, ~0:0\d left\n$/); // a line per tenth
    // The save holds the fraction (no going back, no promise of time), and the end is 100%.
    now += 6430;
    view.progress(save());
    expect(view.snapshot().fraction).toBeCloseTo(s.fraction, 3);
    expect(view.snapshot().remainingMs).toBeNull();
    view.job(job("succeeded", progress(1, { nodes_done: 3, nodes_total: 3, current_node: null, step: null, steps: null })));
    expect(view.snapshot()).toMatchObject({ fraction: 1, remainingMs: null });
  });

  it("a sampler found half done (`flowgate wait`) is timed from the steps seen, not read as fast", () => {
    let now = 1_000_000;
    const view = new ProgressView({ write: () => undefined }, "plain", () => now);
    view.job(job("running", sampler(4000)));
    expect(view.snapshot().remainingMs).toBeNull();
    now += 1000;
    view.progress(sampler(4100));
    // 10 ms a step; the save is unknown (never seen) and weighs nothing yet.
    expect(view.snapshot().remainingMs).toBe(3900 * 10);
    expect(view.snapshot().fraction).toBeCloseTo(4100 / 8000, 3);
  });

  it("never goes back while the step rate changes", () => {
    let now = 1_000_000;
    const view = new ProgressView({ write: () => undefined }, "plain", () => now);
    view.job(job("running", sampler(0)));
    now += 1000;
    view.progress(sampler(4000)); // fast at first
    const first = view.snapshot().fraction;
    now += 60_000;
    view.progress(sampler(4001)); // then slow: the rate falls, the estimate of what is done with it
    expect(view.snapshot().fraction).toBeGreaterThanOrEqual(first);
  });

  it("without a stepped node, goes by node count; no estimate while a step-less node runs", () => {
    let now = 1_000_000;
    const delay = (value: number, node: string | null): Progress =>
      progress(value, {
        nodes_done: Math.round(value * 3),
        nodes_total: 3,
        current_node: node,
        current_node_class: node && "FlowgateDelay",
        step: null,
        steps: null,
      });
    const view = new ProgressView({ write: () => undefined }, "plain", () => now);
    view.job(job("running", delay(0, "1")));
    now += 3000;
    view.progress(delay(1 / 3, "2"));
    expect(view.snapshot().remainingMs).toBeNull();
    expect(view.snapshot().fraction).toBeCloseTo(1 / 3);
    now += 30_000;
    expect(view.snapshot().remainingMs).toBeNull();
    expect(plainLine(view.snapshot())).not.toContain("left");
    view.progress(delay(2 / 3, null));
    expect(view.snapshot().remainingMs).toBeCloseTo(33_000 / 2);
  });

  it("plain mode prints a line per status, node or tenth of progress, not per event", () => {
    const out: string[] = [];
    const view = new ProgressView({ write: (t) => out.push(t) }, "plain", () => 0);
    const stepless = { step: null, steps: null };
    view.job(job("running", progress(0.1, stepless)));
    view.progress(progress(0.12, stepless));
    view.progress(progress(0.15, stepless));
    view.progress(progress(0.21, stepless));
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

// Figures, the markdown table, and bench/results.json.
import { execFileSync } from "node:child_process";
import os from "node:os";
import { fmt } from "./stats.ts";

/** A target: on the ratio to the baseline, or on the measured value itself. */
export interface Target {
  on: "ratio" | "value";
  op: ">=" | "<=";
  bound: number;
}

/** One reported figure. */
export interface Figure {
  scenario: string;
  metric: string;
  /** Median over rounds (or the single figure of a one-shot measurement). */
  value: number | null;
  unit: string;
  /** What the value is compared with, measured in the same run. */
  baseline?: { name: string; value: number | null; unit: string };
  /** value / baseline as the median of per-round ratios. */
  ratio?: number | null;
  target?: Target;
  met?: boolean | null;
  /** Per-round values, in order. */
  rounds?: number[];
  note?: string;
}

/** Fills `met` from the target. */
export function judge(f: Figure): Figure {
  if (!f.target) return f;
  const x = f.target.on === "ratio" ? f.ratio : f.value;
  if (x === null || x === undefined || Number.isNaN(x)) return { ...f, met: null };
  return { ...f, met: f.target.op === ">=" ? x >= f.target.bound : x <= f.target.bound };
}

function targetText(f: Figure): string {
  if (!f.target) return "";
  const { on, op, bound } = f.target;
  const sign = op === ">=" ? "≥" : "≤";
  return on === "ratio" ? `ratio ${sign} ${bound}` : `${sign} ${fmt(bound)} ${f.unit}`;
}

function metText(f: Figure): string {
  if (f.met === undefined) return "";
  if (f.met === null) return "n/a";
  return f.met ? "met" : "**MISSED**";
}

/** The markdown table of every figure. */
export function markdownTable(figures: readonly Figure[]): string {
  const rows = ["| scenario | figure | measured (median) | baseline (same run) | ratio | target | result |", "| --- | --- | --- | --- | --- | --- | --- |"];
  for (const f of figures) {
    const base = f.baseline ? `${fmt(f.baseline.value)} ${f.baseline.unit} (${f.baseline.name})` : "";
    const ratio = f.ratio === undefined ? "" : fmt(f.ratio);
    rows.push(`| ${f.scenario} | ${f.metric} | ${fmt(f.value)} ${f.unit} | ${base} | ${ratio} | ${targetText(f)} | ${metText(f)} |`);
  }
  return rows.join("\n");
}

/** The machine, for the record. */
export function machineInfo(dataDir: string): Record<string, unknown> {
  const cpus = os.cpus();
  let fsType: string | null = null;
  try {
    fsType = execFileSync("stat", ["-f", "-c", "%T", dataDir], { encoding: "utf8" }).trim();
  } catch {
    fsType = null;
  }
  return {
    hostname: os.hostname(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpu: cpus[0]?.model ?? "unknown",
    cpus: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    loadavgAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    dataDirFilesystem: fsType,
  };
}

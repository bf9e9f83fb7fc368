// The comfyui backend's overhead: a trivial 3-node job (EmptyImage, ImageInvert, SaveImage)
// submitted the ComfyUI way (POST /prompt, done at `execution_success` on /ws), straight to a
// ComfyUI-speaking upstream and through flowgate in comfyui mode in front of it, rounds
// interleaved. The upstream is a ComfyUI double in its own process (bench/lib/comfyui-double.ts:
// ComfyUI's server behaviour over the embedded engine), the front with its default settings
// (outputs read from the folder it finds beside it) and, reported only, fetching outputs by /view;
// then flowgate's own hosted interface as the upstream (reported only). BENCH_COMFYUI_URL
// measures against a real ComfyUI instead.
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import WebSocket from "ws";
import { spawnServer, type ServerChild } from "../lib/child.ts";
import type { BenchContext } from "../lib/context.ts";
import { judge, type Figure } from "../lib/report.ts";
import { median, medianRatio, nowMs } from "../lib/stats.ts";

/** One ComfyUI-protocol client: a socket under its client id, prompts timed from POST to execution_success. */
class PromptClient {
  private readonly ended = new Map<string, { at: number; ok: boolean }>();
  private readonly waiters = new Map<string, () => void>();
  private readonly clientId = randomUUID();
  private ws: WebSocket | null = null;
  private readonly base: string;

  constructor(base: string) {
    this.base = base.replace(/\/+$/, "");
  }

  async open(): Promise<void> {
    // Without permessage-deflate, which a real ComfyUI would take from `ws`'s default offer: the
    // direct side then pays no compression that the side through flowgate (which declines it) does not.
    const ws = new WebSocket(`${this.base.replace(/^http/, "ws")}/ws?clientId=${this.clientId}`, { perMessageDeflate: false });
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      const at = nowMs();
      const m = JSON.parse(String(data)) as { type: string; data?: { prompt_id?: string } };
      const id = m.data?.prompt_id;
      if (!id || (m.type !== "execution_success" && m.type !== "execution_error" && m.type !== "execution_interrupted")) return;
      if (this.ended.has(id)) return;
      this.ended.set(id, { at, ok: m.type === "execution_success" });
      this.waiters.get(id)?.();
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    this.ws = ws;
  }

  /** Milliseconds from sending POST /prompt to the prompt's execution_success. */
  async run(prompt: Record<string, unknown>, timeoutMs = 30_000): Promise<number> {
    const t0 = nowMs();
    const res = await fetch(`${this.base}/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt, client_id: this.clientId }),
    });
    const body = (await res.json()) as { prompt_id?: string };
    if (!res.ok || typeof body.prompt_id !== "string") throw new Error(`POST /prompt answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    const id = body.prompt_id;
    if (!this.ended.has(id)) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`prompt ${id} did not end in ${timeoutMs} ms`)), timeoutMs);
        this.waiters.set(id, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.waiters.delete(id);
    }
    const end = this.ended.get(id)!;
    this.ended.delete(id);
    if (!end.ok) throw new Error(`prompt ${id} did not succeed`);
    return end.at - t0;
  }

  close(): void {
    this.ws?.terminate();
  }
}

/** The 3-node job; the color changes every round so that no result is served from a cache. */
function trivialJob(round: number): Record<string, unknown> {
  return {
    "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color: (round * 7919) % 0xffffff } },
    "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "bench" } },
  };
}

/** Where the front's upstream is, and where the front reads outputs (its --comfyui-output-dir). */
interface Setup {
  upstream: string;
  outputs: "auto" | "off";
  scenario: string;
  note: string;
  /** Judged against the 3 ms target, or reported only. */
  judged: boolean;
}

export async function comfyuiScenarios(ctx: BenchContext): Promise<Figure[]> {
  const children: ServerChild[] = [];
  try {
    const spawnFront = async (s: Setup) =>
      spawnServer({
        kind: "flowgate",
        name: "comfyui-front",
        dataDir: await mkdtemp(join(ctx.tmpRoot, "front-")),
        config: { engine: "comfyui", comfyuiUrls: [s.upstream], comfyuiOutputDirs: [s.outputs] },
      });
    const setups: Setup[] = [];
    const job = "3-node job (EmptyImage, ImageInvert, SaveImage), submit to done, through flowgate vs direct";
    const realUrl = process.env.BENCH_COMFYUI_URL;
    // Judged: the default settings, with which a front beside ComfyUI reads outputs from its
    // folder. Reported: outputs by /view (`off`), the cost where ComfyUI runs on another machine.
    const viewNote =
      "reported, not judged: outputs fetched with /view (--comfyui-output-dir off), as from a ComfyUI on another machine; beside it the default reads its folder";
    if (realUrl) {
      const note = "POST /prompt to execution_success on /ws, same client both ways; a real ComfyUI (BENCH_COMFYUI_URL)";
      setups.push({ upstream: realUrl, outputs: "auto", scenario: `ComfyUI backend: ${job} (a real ComfyUI, default settings)`, note, judged: true });
      setups.push({
        upstream: realUrl,
        outputs: "off",
        scenario: `ComfyUI backend: ${job} (a real ComfyUI, outputs by /view)`,
        note: `${note}; ${viewNote}`,
        judged: false,
      });
    } else {
      const outputDir = await mkdtemp(join(ctx.tmpRoot, "comfyui-out-"));
      const double = await spawnServer({ kind: "comfyui-double", name: "comfyui-double", outputDir });
      children.push(double);
      const note =
        "POST /prompt to execution_success on /ws, same client both ways; the upstream is a ComfyUI double (ComfyUI's server behaviour over the embedded engine, bench/lib/comfyui-double.ts)";
      setups.push({ upstream: double.url, outputs: "auto", scenario: `ComfyUI backend: ${job} (ComfyUI double, default settings)`, note, judged: true });
      setups.push({
        upstream: double.url,
        outputs: "off",
        scenario: `ComfyUI backend: ${job} (ComfyUI double, outputs by /view)`,
        note: `${note}; ${viewNote}`,
        judged: false,
      });
      const hosted = await spawnServer({ kind: "flowgate", name: "comfyui-upstream", dataDir: await mkdtemp(join(ctx.tmpRoot, "upstream-")), config: {} });
      children.push(hosted);
      setups.push({
        upstream: hosted.url,
        outputs: "auto",
        scenario: `ComfyUI backend: ${job} (flowgate's hosted interface as the upstream)`,
        note: "reported, not judged: this upstream sends a node's `executed` only with its job's durable end, and its /view answers 302 to a signed link (HOST-6), so the front's output fetch is two requests after the upstream's end, where a ComfyUI's is one beside it",
        judged: false,
      });
    }
    const figures: Figure[] = [];
    for (const setup of setups) {
      const front = await spawnFront(setup);
      try {
        figures.push(await measure(ctx, setup, front.url));
      } finally {
        await front.stop();
      }
    }
    return figures;
  } finally {
    for (const c of children) await c.stop();
  }
}

/** Rounds of the trivial job straight to the upstream and through the front, interleaved. */
async function measure(ctx: BenchContext, setup: Setup, frontUrl: string): Promise<Figure> {
  const direct = new PromptClient(setup.upstream);
  const through = new PromptClient(frontUrl);
  try {
    await Promise.all([direct.open(), through.open()]);
    let n = Math.floor(Math.random() * 1_000_000);
    // A service runs warm: the rounds are timed once the JIT has compiled both sides' paths (the
    // first hundred jobs through a fresh process take about a millisecond more each).
    for (let i = 0; i < ctx.sizes.comfyuiWarmupRounds; i++) {
      await direct.run(trivialJob(n++));
      await through.run(trivialJob(n++));
    }
    const tDirect: number[] = [];
    const tThrough: number[] = [];
    for (let r = 0; r < ctx.sizes.comfyuiRounds; r++) {
      // Alternate the order so that neither side always runs on a just-warmed machine.
      if (r % 2 === 0) {
        tDirect.push(await direct.run(trivialJob(n++)));
        tThrough.push(await through.run(trivialJob(n++)));
      } else {
        tThrough.push(await through.run(trivialJob(n++)));
        tDirect.push(await direct.run(trivialJob(n++)));
      }
    }
    const overhead = median(tThrough) - median(tDirect);
    // Where the front read outputs from, as its metrics say: the default settings find the folder.
    const folder = /^flowgate_comfyui_output_folder\{[^}]*\} 1$/m.test(await (await fetch(`${frontUrl}/metrics`)).text());
    if (setup.outputs === "auto" && !folder && setup.judged)
      ctx.warn(`comfyui: the front did not find its upstream's output folder (${setup.upstream}); outputs went by /view`);
    ctx.log(
      `comfyui (${setup.scenario.replace(/^.*\(/, "").replace(/\)$/, "")}): direct ${median(tDirect).toFixed(2)} ms, through flowgate ${median(tThrough).toFixed(2)} ms (+${overhead.toFixed(2)} ms)`,
    );
    return judge({
      scenario: setup.scenario,
      metric: "overhead p50",
      value: overhead,
      unit: "ms",
      baseline: { name: "the same job straight to the upstream", value: median(tDirect), unit: "ms" },
      ratio: medianRatio(tThrough, tDirect),
      ...(setup.judged ? { target: { on: "value", op: "<=", bound: 3 } } : {}),
      rounds: tThrough.map((t, i) => t - tDirect[i]!),
      note: `${setup.note}; outputs ${folder ? "read from the upstream's folder" : "fetched with /view"}`,
    });
  } finally {
    direct.close();
    through.close();
  }
}

// The comfyui backend's overhead: a trivial 3-node job (EmptyImage, ImageInvert, SaveImage)
// submitted the ComfyUI way (POST /prompt, done at `execution_success` on /ws), straight to a
// ComfyUI-speaking upstream and through flowgate in comfyui mode in front of it, rounds
// interleaved. The upstream is a flowgate child with the embedded engine (its hosted interface
// speaks ComfyUI's protocol); BENCH_COMFYUI_URL measures against a real ComfyUI instead, and
// BENCH_COMFYUI_OUTPUT_DIR (that ComfyUI's output folder) has the front read outputs from it.
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

export async function comfyuiScenarios(ctx: BenchContext): Promise<Figure[]> {
  const rounds = ctx.sizes.engineRounds;
  const children: ServerChild[] = [];
  const clients: PromptClient[] = [];
  try {
    let upstreamUrl = process.env.BENCH_COMFYUI_URL;
    if (!upstreamUrl) {
      const upstream = await spawnServer({ kind: "flowgate", name: "comfyui-upstream", dataDir: await mkdtemp(join(ctx.tmpRoot, "upstream-")), config: {} });
      children.push(upstream);
      upstreamUrl = upstream.url;
    }
    const front = await spawnServer({
      kind: "flowgate",
      name: "comfyui-front",
      dataDir: await mkdtemp(join(ctx.tmpRoot, "front-")),
      config: { engine: "comfyui", comfyuiUrls: [upstreamUrl], comfyuiOutputDirs: process.env.BENCH_COMFYUI_URL && process.env.BENCH_COMFYUI_OUTPUT_DIR ? [process.env.BENCH_COMFYUI_OUTPUT_DIR] : [] },
    });
    children.push(front);
    const direct = new PromptClient(upstreamUrl);
    const through = new PromptClient(front.url);
    clients.push(direct, through);
    await Promise.all([direct.open(), through.open()]);

    let n = Math.floor(Math.random() * 1_000_000);
    for (let i = 0; i < 10; i++) {
      await direct.run(trivialJob(n++));
      await through.run(trivialJob(n++));
    }
    const tDirect: number[] = [];
    const tThrough: number[] = [];
    for (let r = 0; r < rounds; r++) {
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
    ctx.log(`comfyui: direct ${median(tDirect).toFixed(2)} ms, through flowgate ${median(tThrough).toFixed(2)} ms (+${overhead.toFixed(2)} ms)`);
    return [
      judge({
        scenario: `ComfyUI backend: 3-node job (EmptyImage, ImageInvert, SaveImage), submit to done, through flowgate vs direct${process.env.BENCH_COMFYUI_URL ? ` (a real ComfyUI${process.env.BENCH_COMFYUI_OUTPUT_DIR ? ", outputs read from its folder" : ""})` : ""}`,
        metric: "overhead p50",
        value: overhead,
        unit: "ms",
        baseline: { name: "the same job straight to the upstream", value: median(tDirect), unit: "ms" },
        ratio: medianRatio(tThrough, tDirect),
        target: { on: "value", op: "<=", bound: 3 },
        rounds: tThrough.map((t, i) => t - tDirect[i]!),
        note: "POST /prompt to execution_success on /ws, same client both ways; the upstream is a flowgate child with the embedded engine",
      }),
    ];
  } finally {
    for (const c of clients) c.close();
    for (const c of children) await c.stop();
  }
}

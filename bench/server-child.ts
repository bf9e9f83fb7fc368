// A server under test, in its own process: `node --expose-gc --import tsx bench/server-child.ts <spec-json>`.
// Either a bare node:http server answering fixed bytes (the baseline), a ComfyUI double, or
// flowgate started with embedded defaults plus the overrides in the spec. Talks to the bench over
// the IPC channel.
import http from "node:http";
import { writeHeapSnapshot } from "node:v8";
import sharp from "sharp";
import { loadConfig, type Config } from "../src/config/config.ts";
import { createEngine } from "../src/cli/create-engine.ts";
import { EmbeddedEngine } from "../src/engine/embedded-engine.ts";
import { engineAdapter } from "../src/jobs/engine-adapter.ts";
import { startServer, type RunningServer } from "../src/server/start.ts";
import { isTerminalStatus } from "../src/store/index.ts";
import { startComfyDouble } from "./lib/comfyui-double.ts";
import type { BroadcastTimes, ChildCounts, ChildNotice, ChildReply, ChildRequest, ChildSpec, MemorySample } from "./lib/protocol.ts";

const spec = JSON.parse(process.argv[2] ?? "{}") as ChildSpec;

function send(message: ChildNotice | ChildReply): void {
  process.send?.(message);
}

// The bench owns this process: when it goes away, so do we.
process.on("disconnect", () => process.exit(0));

async function memory(gc: boolean): Promise<MemorySample> {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (gc && collect) {
    for (let i = 0; i < 4; i++) {
      collect();
      await new Promise((r) => setImmediate(r));
    }
  }
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers };
}

async function startBare(s: Extract<ChildSpec, { kind: "bare" }>): Promise<{ url: string; close(): Promise<void> }> {
  const body = Buffer.from(s.bodyBase64, "base64");
  const headers = { "content-type": s.contentType, "content-length": String(body.length) };
  const server = http.createServer((req, res) => {
    // Bodies are not expected; drain anything sent so the connection stays usable.
    req.resume();
    res.writeHead(200, headers);
    res.end(body);
  });
  server.keepAliveTimeout = 72_000; // as Fastify's default
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Holds every request open as an event stream after one frame, like a minimal SSE server. */
async function startBareSse(s: Extract<ChildSpec, { kind: "bare-sse" }>): Promise<{ url: string; held: Set<http.ServerResponse>; close(): Promise<void> }> {
  const held = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache, no-transform", connection: "keep-alive" });
    res.flushHeaders();
    res.write(s.firstFrame);
    held.add(res);
    res.on("close", () => held.delete(res));
  });
  server.keepAliveTimeout = 72_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    held,
    close: () =>
      new Promise<void>((r) => {
        for (const res of held) res.destroy();
        server.close(() => r());
      }),
  };
}

/** libvips' operation cache as it stands (sharp.cache with its default limits, which it keeps). */
function vipsCache(): { memoryMB: number; items: number } {
  const stats = sharp.cache({ memory: 50, files: 20, items: 100 });
  return { memoryMB: stats.memory.current, items: stats.items.current };
}

/** The engine of the flowgate child, kept for its cache statistics. */
let engine: EmbeddedEngine | null = null;

async function startFlowgate(s: Extract<ChildSpec, { kind: "flowgate" }>): Promise<RunningServer> {
  const config: Config = {
    ...loadConfig(["--data-dir", s.dataDir, "--port", "0", "--host", "127.0.0.1"], {}),
    reaperIntervalMs: 3_600_000,
    ...s.config,
  };
  // As `flowgate serve` builds it: the embedded engine, or in front of a ComfyUI (or a ComfyUI-speaking flowgate).
  const built = createEngine(config);
  if (built instanceof EmbeddedEngine) engine = built;
  return startServer(config, engineAdapter(built), { quiet: true });
}

async function main(): Promise<void> {
  let close: () => Promise<void>;
  let url: string;
  let flowgate: RunningServer | null = null;
  let held: Set<http.ServerResponse> | null = null;
  let completed = 0;
  let unsuccessful = 0;
  const watches = new Map<string, { jobId: string; status: string }>();

  if (spec.kind === "bare") {
    const bare = await startBare(spec);
    url = bare.url;
    close = bare.close;
  } else if (spec.kind === "comfyui-double") {
    const double = await startComfyDouble(spec.outputDir);
    url = double.url;
    close = double.close;
  } else if (spec.kind === "bare-sse") {
    const bare = await startBareSse(spec);
    url = bare.url;
    close = bare.close;
    held = bare.held;
  } else {
    flowgate = await startFlowgate(spec);
    url = flowgate.url;
    close = flowgate.close;
    flowgate.runtime.events.subscribeAll((e) => {
      if (e.type !== "status") return;
      if (isTerminalStatus(e.job.status)) {
        completed++;
        if (e.job.status !== "succeeded") unsuccessful++;
      }
      for (const [key, w] of watches) {
        if (w.jobId === e.job.id && w.status === e.job.status) {
          const tNs = process.hrtime.bigint().toString();
          watches.delete(key);
          setImmediate(() => send({ event: "transition", jobId: w.jobId, status: w.status, tNs, idleNs: process.hrtime.bigint().toString() }));
        }
      }
    });
  }

  const handle = async (req: ChildRequest): Promise<unknown> => {
    switch (req.op) {
      case "mem":
        return memory(req.gc);
      case "counts": {
        if (!flowgate) return { completed: 0, unsuccessful: 0, queued: 0, running: 0, streams: held?.size ?? null, engineCache: null } satisfies ChildCounts;
        const streams = (flowgate.app as unknown as { eventStreams?: { size: number } }).eventStreams?.size ?? null;
        const rt = flowgate.runtime;
        const cache = engine?.cacheStats();
        return {
          completed,
          unsuccessful,
          queued: rt.dispatcher.waiting,
          running: rt.dispatcher.runningCount,
          streams,
          engineCache: cache ? { entries: cache.entries, bytes: cache.bytes } : null,
          vipsCache: vipsCache(),
        } satisfies ChildCounts;
      }
      case "watch":
        watches.set(`${req.jobId}|${req.status}`, { jobId: req.jobId, status: req.status });
        return true;
      case "cancel-queued": {
        if (!flowgate) return 0;
        const keep = new Set(req.keep);
        const ids = flowgate.runtime.dispatcher.waitingIds().filter((id) => !keep.has(id));
        // Several at a time, so that their writes share commits (one fsync each would take minutes).
        const jobs = flowgate.runtime.jobs;
        let next = 0;
        const canceler = async () => {
          while (next < ids.length) await jobs.cancel({ owner: "" }, ids[next++]!);
        };
        await Promise.all(Array.from({ length: 32 }, canceler));
        return ids.length;
      }
      case "broadcast": {
        if (!held) throw new Error("broadcast needs a bare-sse child");
        const publishedNs = process.hrtime.bigint().toString();
        const streams = [...held];
        for (const frame of req.frames) for (const res of streams) res.write(frame);
        if (req.end) for (const res of streams) res.end();
        const idleNs = await new Promise<string>((r) => setImmediate(() => r(process.hrtime.bigint().toString())));
        return { publishedNs, idleNs } satisfies BroadcastTimes;
      }
      case "heap-snapshot":
        await memory(true);
        return writeHeapSnapshot(req.path);
      case "stop":
        await close();
        setImmediate(() => process.exit(0));
        return true;
    }
  };

  process.on("message", (raw) => {
    const req = raw as ChildRequest;
    handle(req).then(
      (result) => send({ id: req.id, ok: true, result: result ?? null }),
      (err: unknown) => send({ id: req.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  send({ event: "ready", url, pid: process.pid });
}

main().catch((err: unknown) => {
  console.error(`[bench child ${spec.name ?? "?"}]`, err);
  process.exit(1);
});

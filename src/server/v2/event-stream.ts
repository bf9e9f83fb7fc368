// The v2 job event stream (SSE). One bus subscription per job however many streams are open,
// and each payload built once per event and per link context, so fan-out stays cheap.
// No `id:` lines and no resume: the job read with GET is the source of truth. Progress and
// previews are latest-wins per stream (a fast sampler reports every step; a page needs a few a
// second); status events are never throttled, and the last progress goes out before the end.
import type { ServerResponse } from "node:http";
import type { SseEvent } from "../../../generated/asyncapi-types.ts";
import type { JobEvent } from "../../jobs/event-bus.ts";
import { ServiceError } from "../../domain/errors.ts";
import { isTerminalStatus, statusRank, type JobRecord } from "../../store/index.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { jobView, linkKey, outputView, type LinkContext } from "../views.ts";
import { LatestWins } from "./latest-wins.ts";

const PROGRESS_INTERVAL_MS = 250;
/** Streams written per turn of the event loop during a fan-out. */
const FANOUT_BATCH = 500;

interface Stream {
  res: ServerResponse;
  /** Whom the stream counts against (see admit). */
  counted: string;
  links: LinkContext;
  linkKey: string;
  /** Progress frames, at most four a second. */
  progress: LatestWins<string>;
  /** Previews, at most `streamPreviewRate` a second. */
  preview: LatestWins<LatestPreview>;
  /** False until the connect-time `status` is written: earlier events are in that snapshot. */
  ready: boolean;
  /**
   * statusRank of the last status written. A read can show a change a moment before its event
   * goes out, and two changes made durable by one fsync can be published in either order: a
   * status no newer than the one the stream has is not written again (never a step back).
   */
  rank: number;
  /**
   * Progress value last written. Snapshots of one run only grow, but one published before a read
   * (or relayed from another process) can reach the stream after a newer one: it is not written.
   */
  progressValue: number;
}

interface JobStreams {
  streams: Set<Stream>;
  unsubscribe: () => void;
  /** Events are delivered in order even when building a payload needs a read. */
  chain: Promise<void>;
}

/** One SSE frame of an event of the spec (spec/asyncapi.yaml): its name and its JSON data, no `id:`. */
function frame(e: SseEvent): string {
  return `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;
}

/** Open event streams of this server. */
export class EventStreams {
  private readonly runtime: Runtime;
  private readonly jobs = new Map<string, JobStreams>();
  /** Open streams per counted caller: an owner, or an anonymous owner and a client address. */
  private readonly perCaller = new Map<string, number>();
  /**
   * Latest preview of each running job, replayed to a stream that connects mid-run, with the
   * event it was built from (a preview heard from another process is built when delivered).
   */
  private readonly latestPreview = new Map<string, LatestPreview>();
  private readonly keepAlive: NodeJS.Timeout;
  private readonly unsubscribeAll: () => void;

  constructor(runtime: Runtime) {
    this.runtime = runtime;
    this.unsubscribeAll = runtime.events.subscribeAll((e) => {
      if (e.type === "preview") this.latestPreview.set(e.job_id, { event: e, frame: null });
      else if (e.type === "status" && isTerminalStatus(e.job.status)) this.latestPreview.delete(e.job.id);
    });
    this.keepAlive = setInterval(() => {
      for (const js of this.jobs.values()) for (const s of js.streams) s.res.write(": keep-alive\n\n");
    }, runtime.config.sseKeepAliveMs);
    this.keepAlive.unref();
  }

  /** Open streams in all (tests, metrics). */
  get size(): number {
    let n = 0;
    for (const js of this.jobs.values()) n += js.streams.size;
    return n;
  }

  /** Refuses a caller (as counted: see events.ts) over its limit of open streams (429 `too_many_streams`). */
  admit(counted: string): void {
    if ((this.perCaller.get(counted) ?? 0) >= this.runtime.config.maxStreamsPerCaller) {
      throw new ServiceError("too_many_streams", "Too many open event streams; retry later.", null, 5);
    }
  }

  /** Starts a stream on `res` for a job the caller owns, counted against `counted`. */
  async open(job: JobRecord, res: ServerResponse, links: LinkContext, counted: string): Promise<void> {
    const write = (data: string) => void (res.writableEnded || res.write(data));
    const stream: Stream = {
      res,
      counted,
      links,
      linkKey: linkKey(links),
      progress: new LatestWins(PROGRESS_INTERVAL_MS, write),
      preview: new LatestWins(1000 / this.runtime.config.streamPreviewRate, (p: LatestPreview) => write(previewFrame(p))),
      ready: false,
      rank: -1,
      progressValue: -1,
    };
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    this.perCaller.set(counted, (this.perCaller.get(counted) ?? 0) + 1);
    // Subscribe before reading the snapshot, so no transition falls between the two.
    const js = this.attach(job.id, stream);
    this.releaseOnClose(job.id, stream);
    // A client gone before this point already fired its `close`: release at once.
    if (res.destroyed || !res.socket || res.socket.destroyed) return this.detach(job.id, stream);
    // A greeting that cannot read the job ends the stream: the client reconnects or polls.
    js.chain = js.chain.then(() => this.greet(job, stream)).catch(() => void stream.res.end());
  }

  /**
   * Registers the release of a stream when its connection closes. Its own scope holds only the
   * job id: a listener that lives as long as the stream must not keep the job record alive.
   */
  private releaseOnClose(jobId: string, stream: Stream): void {
    stream.res.on("close", () => this.detach(jobId, stream));
  }

  /** Writes the connect-time snapshot (and the latest progress and preview) to a new stream. */
  private async greet(job: JobRecord, stream: Stream): Promise<void> {
    const { res, links } = stream;
    // Read once what other processes say of the job is heard: nothing falls between the two.
    await this.runtime.events.hearing();
    const current = (await this.runtime.currentJob(job.id)) ?? job;
    const snapshot = await this.runtime.jobs.snapshot(current);
    res.write(frame({ event: "status", data: jobView(snapshot, links) }));
    stream.rank = statusRank(current.status);
    stream.progressValue = progressValueOf(current.progress);
    stream.ready = true;
    if (isTerminalStatus(current.status)) return void res.end();
    if (current.progress) {
      res.write(frame({ event: "progress", data: current.progress }));
      stream.progress.sent();
    }
    const preview = this.latestPreview.get(job.id);
    if (preview) {
      res.write(previewFrame(preview));
      stream.preview.sent();
    }
  }

  /** Stops the keep-alive and closes every stream (server shutdown). */
  close(): void {
    clearInterval(this.keepAlive);
    this.unsubscribeAll();
    for (const js of this.jobs.values()) for (const s of js.streams) s.res.end();
  }

  private attach(jobId: string, stream: Stream): JobStreams {
    let js = this.jobs.get(jobId);
    if (!js) {
      const entry: JobStreams = { streams: new Set(), unsubscribe: () => undefined, chain: Promise.resolve() };
      entry.unsubscribe = this.runtime.events.subscribe(jobId, (e) => {
        // An event that cannot be delivered (a failed read) ends the job's streams rather than
        // leaving them a transition behind; clients reconnect and get the current job.
        entry.chain = entry.chain
          .then(() => this.deliver(entry, e))
          .catch(() => {
            for (const s of entry.streams) s.res.end();
          });
      });
      this.jobs.set(jobId, (js = entry));
    }
    js.streams.add(stream);
    return js;
  }

  private detach(jobId: string, stream: Stream): void {
    stream.progress.drop();
    stream.preview.drop();
    const js = this.jobs.get(jobId);
    if (!js?.streams.delete(stream)) return;
    const left = (this.perCaller.get(stream.counted) ?? 1) - 1;
    if (left <= 0) this.perCaller.delete(stream.counted);
    else this.perCaller.set(stream.counted, left);
    if (js.streams.size === 0) {
      js.unsubscribe();
      this.jobs.delete(jobId);
      // A preview of a job another process runs would never see its end here.
      if (!this.runtime.queue.runsHere(jobId)) this.latestPreview.delete(jobId);
    }
  }

  private async deliver(js: JobStreams, e: JobEvent): Promise<void> {
    const streams = [...js.streams].filter((s) => s.ready && !s.res.writableEnded);
    if (streams.length === 0) return;
    switch (e.type) {
      case "status": {
        const terminal = isTerminalStatus(e.job.status);
        if (terminal) this.latestPreview.delete(e.job.id); // heard from another process: no listener of every job saw it
        const rank = statusRank(e.job.status);
        const behind = streams.filter((s) => s.rank < rank);
        if (behind.length === 0) return;
        const snapshot = await this.runtime.jobs.snapshot(e.job);
        // Encoded once per link context (not once per stream), and a terminal frame goes out
        // with the end of the response in a single write.
        const payloads = new Map<string, Buffer>();
        let i = 0;
        const value = progressValueOf(e.job.progress);
        for (const s of behind) {
          s.rank = rank;
          s.progressValue = Math.max(s.progressValue, value);
          let p = payloads.get(s.linkKey);
          if (p === undefined) payloads.set(s.linkKey, (p = Buffer.from(frame({ event: "status", data: jobView(snapshot, s.links) }))));
          if (s.res.writableEnded) continue;
          if (terminal) {
            // The last progress is never dropped; a waiting preview is (the outputs follow).
            s.progress.flush();
            s.preview.drop();
            s.res.end(p);
          } else s.res.write(p);
          // Let the corked writes of the streams done so far reach their sockets before going on.
          if (++i % FANOUT_BATCH === 0) await new Promise<void>((r) => setImmediate(r));
        }
        return;
      }
      case "progress": {
        const value = progressValueOf(e.progress);
        const encoded = frame({ event: "progress", data: e.progress });
        for (const s of streams) {
          if (value < s.progressValue) continue; // never a step back
          s.progressValue = value;
          s.progress.offer(encoded);
        }
        return;
      }
      case "preview": {
        let latest = this.latestPreview.get(e.job_id);
        if (latest?.event !== e) this.latestPreview.set(e.job_id, (latest = { event: e, frame: null }));
        for (const s of streams) s.preview.offer(latest);
        return;
      }
      case "output": {
        const payloads = new Map<string, string>();
        for (const s of streams) {
          let p = payloads.get(s.linkKey);
          if (p === undefined) payloads.set(s.linkKey, (p = frame({ event: "output", data: outputView(e.asset, s.links) })));
          s.res.write(p);
        }
        return;
      }
      default:
        return;
    }
  }
}

/** The value of a progress snapshot, -1 when there is none. */
function progressValueOf(progress: unknown): number {
  const v = (progress as { value?: unknown } | null | undefined)?.value;
  return typeof v === "number" ? v : -1;
}

/** A job's latest preview; its frame is encoded once, when a stream first writes it (most previews of a fast sampler are replaced unsent). */
interface LatestPreview {
  event: Extract<JobEvent, { type: "preview" }>;
  frame: string | null;
}

function previewFrame(p: LatestPreview): string {
  const e = p.event;
  return (p.frame ??= frame({ event: "preview", data: { node_id: e.node_id, content_type: e.content_type, data_base64: e.data.toString("base64") } }));
}

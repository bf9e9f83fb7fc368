// SSE: the job event stream: its media type, no ids, a status event first and on every
// transition to every open stream, progress snapshots, and nothing replayed after a disconnect.
import { check, type T } from "../../check.ts";
import { JOB_STATUSES, MOVES, TERMINAL } from "../../machinery/contract.ts";
import { cancelJob, openEvents, queuedJob, readJobOk, slowGraph, stepsGraph, submitOk, waitTerminal, type Job } from "../support/jobs.ts";
import type { EventStream } from "../../machinery/stream.ts";

const known = (s: string) => (JOB_STATUSES as readonly string[]).includes(s);
const isTerminalStatus = (e: { event: string; json: unknown }) => e.event === "status" && TERMINAL.has(String((e.json as Job | undefined)?.status));

/** Consecutive distinct statuses of a stream. */
function transitions(stream: EventStream): string[] {
  const out: string[] = [];
  for (const s of stream.statuses()) if (out[out.length - 1] !== s) out.push(s);
  return out;
}

export default [
  check("SSE-1 the stream is text/event-stream, without id: lines, and ignores Last-Event-ID", async (t: T) => {
    const ref = await submitOk(t, slowGraph(t));
    const { stream, ex } = await openEvents(t, ref);
    if (!stream) t.fail(`the event stream answered ${ex?.status}`, ex);
    t.expect((stream.headers.get("content-type") ?? "").startsWith("text/event-stream"), `content-type is ${stream.headers.get("content-type")}`);
    await stream.waitFor(isTerminalStatus, t.options.jobTimeoutMs);
    t.expect(stream.ids.length === 0, `the stream carried id: lines (${stream.ids.slice(0, 3).join(", ")})`);
    const resumed = await openEvents(t, ref, { headers: { "last-event-id": stream.ids[0] ?? "1" } });
    t.need(resumed.stream, `reconnecting answered ${resumed.ex?.status}`);
    const first = await resumed.stream.waitFor(() => true, t.options.requestTimeoutMs);
    t.expect(first?.event === "status", `after a reconnect with Last-Event-ID the first event is ${first?.event ?? "missing"}, not the current status`);
  }),

  check("SSE-2 a status event comes first and on every transition, to every open stream", { timeoutMs: 300_000 }, async (t: T) => {
    // A job waiting behind others, so that the streams see it leave queued too.
    const { target: ref, blockers } = await queuedJob(t);
    const streams: EventStream[] = [];
    for (let i = 0; i < 3; i++) {
      const { stream, ex } = await openEvents(t, ref);
      if (!stream) t.fail(`event stream ${i + 1} answered ${ex?.status}`, ex);
      streams.push(stream);
    }
    for (const b of blockers) await cancelJob(t, b);
    await Promise.all(streams.map((s) => s.waitFor(isTerminalStatus, t.options.jobTimeoutMs)));
    const end = await waitTerminal(t, ref);
    streams.forEach((s, i) => {
      t.expect(s.events[0]?.event === "status", `stream ${i + 1} began with ${s.events[0]?.event ?? "nothing"}, not status`);
      const seq = transitions(s);
      t.expect(seq[seq.length - 1] === end.job.status, `stream ${i + 1} ended on ${seq[seq.length - 1]}, the job is ${end.job.status}`);
      for (let k = 1; k < seq.length; k++) {
        const [a, b] = [seq[k - 1]!, seq[k]!];
        if (!known(a) || !known(b)) continue; // a status outside the enum is ST-1's
        t.expect((MOVES[a] ?? []).includes(b), `stream ${i + 1} went ${a} -> ${b}: a transition in between was not pushed`);
      }
    });
  }),

  check("SSE-3 progress events carry complete Progress snapshots during a stepped run", async (t: T) => {
    const ref = await submitOk(t, stepsGraph(t));
    const { stream, ex } = await openEvents(t, ref);
    if (!stream) t.fail(`the event stream answered ${ex?.status}`, ex);
    await stream.waitFor(isTerminalStatus, t.options.jobTimeoutMs);
    const progress = stream.events.filter((e) => e.event === "progress");
    t.expect(progress.length > 0, "no progress event during a stepped run");
    for (const e of progress) {
      const p = e.json as Record<string, unknown> | undefined;
      t.expect(
        !!p && ["value", "nodes_done", "nodes_total"].every((k) => Object.hasOwn(p, k)),
        `progress event ${e.data.slice(0, 200)} is not a complete snapshot`,
      );
    }
  }),

  check("SSE-4 frames sent while disconnected are lost; a new connection starts from the current status", async (t: T) => {
    const ref = await submitOk(t, slowGraph(t));
    const first = await openEvents(t, ref);
    t.need(first.stream, `the event stream answered ${first.ex?.status}`);
    await first.stream.waitFor((e) => e.event === "status", t.options.requestTimeoutMs);
    first.stream.close();
    const end = await waitTerminal(t, ref);
    const again = await openEvents(t, end);
    t.need(again.stream, `reconnecting answered ${again.ex?.status}`);
    await again.stream.waitFor(isTerminalStatus, t.options.requestTimeoutMs);
    const events = again.stream.events;
    t.expect(
      events[0]?.event === "status" && (events[0].json as Job)?.status === end.job.status,
      `the reconnected stream began with ${events[0]?.event} ${events[0]?.data.slice(0, 80) ?? ""}, not the current status`,
    );
    const old = again.stream.statuses().filter((s) => s !== end.job.status);
    t.expect(old.length === 0, `the reconnected stream replayed earlier statuses: ${old.join(", ")}`);
    const read = await readJobOk(t, end);
    t.expect(read.job.status === end.job.status, "GET disagrees with the stream");
  }),
];

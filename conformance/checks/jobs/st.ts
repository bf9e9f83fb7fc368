// ST: job states: the enum, the initial state, the allowed moves, terminal states that stay.
import { check, type T } from "../../check.ts";
import { JOB_STATUSES, MOVES, reachable, TERMINAL } from "../../machinery/contract.ts";
import { failingGraph, readJobOk, slowGraph, submit, submitOk, type JobRef } from "../support/jobs.ts";
import { simpleGraph } from "../support/workflows.ts";

const known = (s: string) => (JOB_STATUSES as readonly string[]).includes(s);

export default [
  check("ST-1 every status is one of queued, running, succeeded, canceling, canceled, failed, expired", { static: true }, async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    const seen = [ref.job.status];
    const end = await t.until("the job ending", async () => {
      const r = await readJobOk(t, ref);
      seen.push(r.job.status);
      if (!known(r.job.status)) t.fail(`status ${JSON.stringify(r.job.status)} is not in the contract's enum`, r.ex);
      return TERMINAL.has(r.job.status) || t.options.static ? r : undefined;
    });
    for (const s of new Set(seen)) t.expect(known(s), `status ${JSON.stringify(s)} is not in the contract's enum`);
    if (!t.options.static) t.expect(TERMINAL.has(end.job.status), `the job did not end`);
  }),

  check("ST-2 a successful submission answers 201 with the job queued", { static: true }, async (t: T) => {
    const { ex, ref } = await submit(t, simpleGraph());
    t.expect(ex.status === 201, `the submission answered ${ex.status}`, ex);
    t.expect(ref?.job.status === "queued", `the new job is ${JSON.stringify(ref?.job.status)}, not queued`, ex);
  }),

  check("ST-3 only the contract's moves happen (slow, failing and canceled jobs, polled)", async (t: T) => {
    const sequences: Array<[string, string[]]> = [];
    const follow = async (label: string, ref: JobRef, cancelWhenStarted = false) => {
      const seq = [ref.job.status as string];
      let canceled = false;
      await t.until(
        `the ${label} job ending`,
        async () => {
          const r = await readJobOk(t, ref);
          if (seq[seq.length - 1] !== r.job.status) seq.push(r.job.status);
          if (cancelWhenStarted && !canceled && r.job.status !== "queued") {
            canceled = true;
            await t.http.request("POST", t.http.url(`/api/v2/jobs/${ref.job.id}/cancel`));
          }
          return TERMINAL.has(r.job.status) ? r : undefined;
        },
        undefined,
        50,
      );
      sequences.push([label, seq]);
    };
    await follow("slow", await submitOk(t, slowGraph(t)));
    await follow("failing", await submitOk(t, failingGraph(t)));
    await follow("canceled", await submitOk(t, slowGraph(t)), true);
    for (const [label, seq] of sequences) {
      for (let i = 1; i < seq.length; i++) {
        const [a, b] = [seq[i - 1]!, seq[i]!];
        if (!known(a) || !known(b) || TERMINAL.has(a)) continue; // ST-1 and ST-4 report those
        t.expect(reachable(a, b), `${label} job moved ${a} -> ${b}; allowed from ${a}: ${(MOVES[a] ?? []).join(", ") || "nothing"}`);
      }
    }
  }),

  check("ST-4 a terminal status never changes", async (t: T) => {
    const ref = await submitOk(t, simpleGraph());
    const end = await t.until("the job ending", async () => {
      const r = await readJobOk(t, ref);
      return TERMINAL.has(r.job.status) ? r : undefined;
    });
    for (let i = 0; i < 3; i++) {
      const again = await readJobOk(t, end);
      t.expect(again.job.status === end.job.status, `a ${end.job.status} job now reads ${again.job.status}`);
      t.expect(again.job.completed_at === end.job.completed_at, `completed_at changed from ${end.job.completed_at} to ${again.job.completed_at}`);
    }
  }),
];

// LOG-7: a log larger than the capture keeps its tail and says so. The bound is not part of the
// contract, so the job prints more than any reasonable bound (about 1.5 MiB, built on the server
// from a short seed, so the submission stays small) and the check holds the log against what it
// printed: a suffix of it, the last line included, with `truncated` true.
import { check, type T } from "../../check.ts";
import { runOk } from "../support/jobs.ts";
import { nonce, type Graph } from "../support/workflows.ts";

/** Times the seed line is doubled: 2^14 copies of about 97 bytes. */
const DOUBLINGS = 14;

/** A graph that prints a first line, then about 1.5 MiB and a last line; and the exact text it prints. */
function floodGraph(marker: string): { graph: Graph; printed: string } {
  const first = `${marker} first`;
  const seed = `${marker} 0123456789abcdefghijklmnopqrstuvwxyz\n`;
  const graph: Graph = {
    "1": { class_type: "FlowgatePrint", inputs: { text: first } },
    // The flood depends on the first line's node, so it prints after it.
    "2": { class_type: "StringConcatenate", inputs: { string_a: ["1", 0], string_b: seed, delimiter: "\n" } },
  };
  let text = `${first}\n${seed}`;
  let node = "2";
  for (let i = 0; i < DOUBLINGS; i++) {
    const id = String(3 + i);
    graph[id] = { class_type: "StringConcatenate", inputs: { string_a: [node, 0], string_b: [node, 0], delimiter: "" } };
    text += text;
    node = id;
  }
  const last = `${marker} last`;
  graph["90"] = { class_type: "StringConcatenate", inputs: { string_a: [node, 0], string_b: last, delimiter: "" } };
  graph["91"] = { class_type: "FlowgatePrint", inputs: { text: ["90", 0] } };
  return { graph, printed: `${first}\n${text}${last}\n` };
}

export default [
  check(
    "LOG-7 a log larger than the capture keeps its tail, with truncated true",
    { surfaces: ["serverless"], when: (r) => (r.options.demo ? "--demo was given: the demo deployment withholds logs (LOG-4 checks that)" : undefined) },
    async (t: T) => {
      const { graph, printed } = floodGraph(`conformance-flood-${nonce()}`);
      t.requireClasses(graph, "print");
      const end = await runOk(t, graph);
      const logs = end.job.logs;
      t.need(logs, "GET of the finished job showed no logs (reported under LOG-1)");
      const bytes = Buffer.byteLength(printed);
      if (!logs.truncated) {
        // Nothing shed: the whole output must be there, and the bound is above what was printed.
        t.expect(
          logs.text.endsWith(printed),
          `truncated is false, yet the log does not hold the ${bytes} bytes printed (it holds ${Buffer.byteLength(logs.text)}, ending ${JSON.stringify(logs.text.slice(-80))})`,
        );
        t.skip(
          `the job printed ${bytes} bytes and its log kept them all (truncated false): this surface's capture bound is above that, so nothing was shed to check`,
        );
      }
      // The tail is kept: the log is a suffix of what was printed (empty when shed entirely).
      t.expect(
        printed.endsWith(logs.text) && logs.text.length < printed.length,
        `truncated is true, but the log (${Buffer.byteLength(logs.text)} bytes, starting ${JSON.stringify(logs.text.slice(0, 60))}, ending ${JSON.stringify(logs.text.slice(-60))}) is not the tail of the ${bytes} bytes printed`,
        end.ex,
      );
    },
  ),
];

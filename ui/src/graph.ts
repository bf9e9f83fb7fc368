// What a graph is, in a few words: a title given to one of its nodes, or the classes of its
// output nodes; read once per job (a job's graph never changes) and kept for the session.
import { api } from "./api.ts";

/** A graph in the API format, as far as the pages read it. */
export type Graph = Record<string, { class_type?: string; inputs?: Record<string, unknown>; _meta?: { title?: string } }>;

/** The nodes no other node reads from: where a graph's results come out. */
export function outputNodes(graph: Graph): string[] {
  const read = new Set<string>();
  for (const node of Object.values(graph)) {
    for (const value of Object.values(node?.inputs ?? {})) {
      if (Array.isArray(value) && value.length === 2 && (typeof value[0] === "string" || typeof value[0] === "number")) read.add(String(value[0]));
    }
  }
  return Object.keys(graph).filter((id) => !read.has(id));
}

/** "sampler → SaveImage · 3 nodes": a title given to a node (its outputs first), else the output classes. */
export function summarize(graph: Graph): string {
  const ids = Object.keys(graph);
  const outputs = outputNodes(graph);
  const titled = (id: string) => {
    const node = graph[id];
    const title = node?._meta?.title?.trim();
    return title && title !== node?.class_type ? title : null;
  };
  const title = outputs.map(titled).find(Boolean) ?? ids.map(titled).find(Boolean) ?? null;
  const classes = [...new Set(outputs.map((id) => graph[id]?.class_type ?? "?"))];
  const what = title ?? (classes.length > 3 ? `${classes.slice(0, 3).join(", ")} +${classes.length - 3}` : classes.join(", "));
  return `${what} · ${ids.length} node${ids.length === 1 ? "" : "s"}`;
}

const summaries = new Map<string, Promise<string | null>>();
const waiting: Array<() => void> = [];
let reading = 0;
/** Graph reads at once: a first page of jobs must not queue dozens of requests in front of the rest. */
const READS_AT_ONCE = 4;

/** The summary of job `id`'s graph (null when it cannot be read), read at most once per session. */
export function jobSummary(id: string): Promise<string | null> {
  let p = summaries.get(id);
  if (!p) {
    p = slot()
      .then(() => api<{ workflow: Graph }>("GET", `/api/v2/jobs/${encodeURIComponent(id)}/workflow`))
      .then(
        (w) => summarize(w.workflow),
        () => {
          summaries.delete(id); // read again next time (a token may be given meanwhile)
          return null;
        },
      )
      .finally(release);
    summaries.set(id, p);
  }
  return p;
}

function slot(): Promise<void> {
  if (reading < READS_AT_ONCE) {
    reading++;
    return Promise.resolve();
  }
  return new Promise((resolve) => waiting.push(resolve));
}

function release(): void {
  const next = waiting.shift();
  if (next) next();
  else reading--;
}

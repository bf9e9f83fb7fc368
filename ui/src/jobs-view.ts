// The caller's jobs, newest first, a page at a time and optionally of one status: the page is
// read every few seconds (new jobs appear), and each unfinished job on it is followed live
// through its event stream (status and progress). Each job says what its graph is. On a narrow
// screen the table's rows become cards (style.css).
import { api, followJob, TERMINAL, type Job, type JobStatus } from "./api.ts";
import { formatAgo, formatDuration, h, replace } from "./dom.ts";
import { jobSummary } from "./graph.ts";
import { progressBar, shortId, statusBadge, stepText } from "./widgets.ts";

const REFRESH_MS = 3000;
/** Jobs on a page. */
const PAGE_SIZE = 20;
/** Streams open at once from the list (the server allows 100 per caller). */
const MAX_STREAMS = 20;
const STATUSES: readonly JobStatus[] = ["queued", "running", "canceling", "succeeded", "failed", "canceled", "expired"];

/** The list's address: `#/` with an optional status and the cursor of the page. */
function listHref(status: string | null, cursor: string | null): string {
  const q = new URLSearchParams();
  if (status) q.set("status", status);
  if (cursor) q.set("cursor", cursor);
  const text = q.toString();
  return text ? `#/?${text}` : "#/";
}

/** Renders the list into `root` (`query`: `status`, `cursor`); returns the function that stops its timers and streams. */
export function jobsView(root: HTMLElement, onError: (err: unknown) => void, query: URLSearchParams): () => void {
  const status = STATUSES.find((s) => s === query.get("status")) ?? null;
  const cursor = query.get("cursor");
  const jobs = new Map<string, Job>();
  const streams = new Map<string, AbortController>();
  const summaries = new Map<string, string>();
  let order: string[] = [];
  let nextCursor: string | null = null;
  let stopped = false;
  let timer: number | undefined;
  let frame = 0;

  const body = h("tbody");
  const empty = h("p", { className: "empty", hidden: true });
  replace(
    empty,
    ...(status || cursor ? [`No ${status ?? ""} jobs here. `, h("a", { href: "#/" }, "Show all jobs")] : ["No jobs yet. ", h("a", { href: "#/submit" }, "Submit a workflow"), " to get started."]),
  );
  const live = h("p", { className: "sr-only", "aria-live": "polite", id: "jobs-live" });
  const filter = h(
    "select",
    { id: "status-filter", "aria-label": "Show jobs of one status" },
    h("option", { value: "" }, "All statuses"),
    ...STATUSES.map((s) => h("option", { value: s, selected: s === status }, s[0]!.toUpperCase() + s.slice(1))),
  );
  filter.addEventListener("change", () => (window.location.hash = listHref(filter.value || null, null)));
  const pager = h("nav", { className: "pager", "aria-label": "Pages of jobs" });
  replace(
    root,
    h("div", { className: "page-head" }, h("h1", { tabindex: -1 }, "Jobs"), h("div", { className: "head-actions" }, filter, h("a", { className: "button", href: "#/submit" }, "New job"))),
    live,
    h(
      "div",
      { className: "card table-card" },
      h(
        "table",
        { className: "jobs" },
        h("caption", { className: "sr-only" }, `Your ${status ?? ""} jobs, newest first`),
        h("thead", {}, h("tr", {}, ...["Job", "Workflow", "Status", "Progress", "Created", "Duration"].map((t) => h("th", { scope: "col" }, t)))),
        body,
      ),
      empty,
    ),
    pager,
  );

  const summaryOf = (id: string): string => {
    const known = summaries.get(id);
    if (known !== undefined) return known;
    void jobSummary(id).then((text) => {
      if (text === null || stopped) return;
      summaries.set(id, text);
      const cell = body.querySelector(`tr[data-job-id="${CSS.escape(id)}"] .workflow`);
      if (cell) cell.textContent = text;
    });
    return "…";
  };

  const row = (job: Job): HTMLTableRowElement => {
    const p = job.progress;
    const duration = job.started_at ? formatDuration((job.completed_at ? Date.parse(job.completed_at) : Date.now()) - Date.parse(job.started_at)) : "—";
    return h(
      "tr",
      { "data-job-id": job.id, "data-status": job.status },
      h("td", { "data-label": "Job" }, h("a", { href: `#/jobs/${job.id}`, className: "mono", "aria-label": `Job ${job.id}` }, shortId(job.id)), job.outputs.length > 0 ? h("span", { className: "muted small" }, ` · ${job.outputs.length} output${job.outputs.length === 1 ? "" : "s"}`) : null),
      h("td", { "data-label": "Workflow", className: "workflow" }, summaryOf(job.id)),
      h("td", { "data-label": "Status" }, statusBadge(job.status)),
      h("td", { "data-label": "Progress", className: "progress-cell" }, progressBar(job, `Progress of job ${shortId(job.id)}`), job.status === "running" ? h("div", { className: "muted small" }, stepText(p)) : null),
      h("td", { "data-label": "Created", className: "muted" }, h("time", { datetime: job.created_at }, formatAgo(job.created_at))),
      h("td", { "data-label": "Duration", className: "muted" }, duration),
    );
  };

  /** At most one render per animation frame, however fast events come. */
  const render = () => {
    frame ||= requestAnimationFrame(() => {
      frame = 0;
      replace(body, ...order.map((id) => row(jobs.get(id)!)));
      empty.hidden = order.length > 0;
      replace(
        pager,
        cursor ? h("a", { href: listHref(status, null), id: "page-newest" }, "← Newest") : null,
        nextCursor ? h("a", { href: listHref(status, nextCursor), id: "page-older", rel: "next" }, "Older →") : null,
      );
    });
  };

  const follow = (job: Job) => {
    if (streams.has(job.id) || TERMINAL.includes(job.status) || streams.size >= MAX_STREAMS) return;
    const controller = new AbortController();
    streams.set(job.id, controller);
    followJob(
      job.urls.events,
      (e) => {
        const current = jobs.get(job.id);
        if (!current) return;
        if (e.event === "status") {
          if (e.data.status !== current.status) live.textContent = `Job ${shortId(job.id)} is ${e.data.status}`;
          jobs.set(job.id, e.data as Job);
        } else if (e.event === "progress") jobs.set(job.id, { ...current, progress: e.data });
        else return;
        render();
      },
      controller.signal,
    )
      .catch(() => undefined)
      .finally(() => streams.delete(job.id));
  };

  const refresh = async () => {
    try {
      const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (status) q.set("status", status);
      if (cursor) q.set("cursor", cursor);
      const page = await api<{ jobs: Job[]; next_cursor: string | null }>("GET", `/api/v2/jobs?${q}`);
      if (stopped) return;
      for (const job of page.jobs) {
        // A streamed job keeps its live state; the others take the list's.
        if (!streams.has(job.id) || !jobs.has(job.id)) jobs.set(job.id, job);
      }
      order = page.jobs.map((j) => j.id);
      nextCursor = page.next_cursor;
      render();
      for (const job of page.jobs) follow(job);
    } catch (err) {
      onError(err);
    } finally {
      if (!stopped) timer = window.setTimeout(refresh, REFRESH_MS);
    }
  };
  void refresh();

  return () => {
    stopped = true;
    window.clearTimeout(timer);
    cancelAnimationFrame(frame);
    for (const c of streams.values()) c.abort();
  };
}

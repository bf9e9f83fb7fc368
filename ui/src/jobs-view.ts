// The caller's jobs, newest first, a page at a time and optionally of one status and with some
// labels (`key=value`, the API's `metadata[key]=value` filter): the page is read every few seconds
// (new jobs appear), and each unfinished job on it is followed live through its event stream
// (status and progress). Each job says what its graph is and shows its labels. On a narrow screen
// the table's rows become cards (style.css).
import { api, followJob, TERMINAL, type Job, type JobStatus } from "./api.ts";
import { formatAgo, formatDuration, h, replace } from "./dom.ts";
import { jobSummary } from "./graph.ts";
import { labelChips, labelsHref, parseLabels, progressBar, shortId, statusBadge, stepText } from "./widgets.ts";

const REFRESH_MS = 3000;
/** Jobs on a page. */
const PAGE_SIZE = 20;
/** Streams open at once from the list (the server allows 100 per caller). */
const MAX_STREAMS = 20;
const STATUSES: readonly JobStatus[] = ["queued", "running", "canceling", "succeeded", "failed", "canceled", "expired"];

/** Renders the list into `root` (`query`: `status`, `label` (repeated `key=value`), `cursor`); returns the function that stops its timers and streams. */
export function jobsView(root: HTMLElement, onError: (err: unknown) => void, query: URLSearchParams): () => void {
  const status = STATUSES.find((s) => s === query.get("status")) ?? null;
  const cursor = query.get("cursor");
  const parsed = parseLabels(query.getAll("label"));
  const labels = "labels" in parsed ? parsed.labels : [];
  const listHref = (st: string | null, cur: string | null, with_: ReadonlyArray<readonly [string, string]> = labels) => labelsHref(with_, st, cur);
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
    ...(status || cursor || labels.length
      ? [`No ${status ?? ""} jobs here. `, h("a", { href: "#/" }, "Show all jobs")]
      : ["No jobs yet. ", h("a", { href: "#/submit" }, "Submit a workflow"), " to get started."]),
  );
  const live = h("p", { className: "sr-only", "aria-live": "polite", id: "jobs-live" });
  const filter = h(
    "select",
    { id: "status-filter", "aria-label": "Show jobs of one status" },
    h("option", { value: "" }, "All statuses"),
    ...STATUSES.map((s) => h("option", { value: s, selected: s === status }, s[0]!.toUpperCase() + s.slice(1))),
  );
  filter.addEventListener("change", () => (window.location.hash = listHref(filter.value || null, null)));
  // Labels: `key=value`, several separated by spaces; Enter applies them, an empty box clears them.
  const labelInput = h("input", {
    type: "search",
    id: "label-filter",
    placeholder: "label: key=value",
    value: labels.map(([k, v]) => `${k}=${v}`).join(" "),
    "aria-label": "Show jobs with these labels (key=value, separated by spaces)",
    "aria-describedby": "label-filter-error",
    spellcheck: false,
    autocomplete: "off",
  });
  const labelError = h(
    "p",
    { className: "field-error", id: "label-filter-error", role: "alert", hidden: !("error" in parsed) },
    "error" in parsed ? parsed.error : "",
  );
  const labelForm = h("form", { className: "label-filter", role: "search" }, labelInput);
  labelForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const typed = parseLabels(labelInput.value.split(/\s+/).filter(Boolean));
    if ("error" in typed) {
      labelError.textContent = typed.error;
      labelError.hidden = false;
      labelInput.setAttribute("aria-invalid", "true");
      return;
    }
    window.location.hash = listHref(status, null, typed.labels);
  });
  const pager = h("nav", { className: "pager", "aria-label": "Pages of jobs" });
  replace(
    root,
    h(
      "div",
      { className: "page-head" },
      h("h1", { tabindex: -1 }, "Jobs"),
      h("div", { className: "head-actions" }, labelForm, filter, h("a", { className: "button", href: "#/submit" }, "New job")),
    ),
    labelError,
    live,
    h(
      "div",
      { className: "card table-card" },
      h(
        "table",
        { className: "jobs" },
        h(
          "caption",
          { className: "sr-only" },
          `Your ${status ?? ""} jobs${labels.length ? ` labelled ${labels.map(([k, v]) => `${k}=${v}`).join(", ")}` : ""}, newest first`,
        ),
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
      const cell = body.querySelector(`tr[data-job-id="${CSS.escape(id)}"] .workflow-summary`);
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
      h(
        "td",
        { "data-label": "Job" },
        h("a", { href: `#/jobs/${job.id}`, className: "mono", "aria-label": `Job ${job.id}` }, shortId(job.id)),
        job.outputs.length > 0 ? h("span", { className: "muted small" }, ` · ${job.outputs.length} output${job.outputs.length === 1 ? "" : "s"}`) : null,
      ),
      h("td", { "data-label": "Workflow", className: "workflow" }, h("span", { className: "workflow-summary" }, summaryOf(job.id)), labelChips(job.metadata)),
      h("td", { "data-label": "Status" }, statusBadge(job.status)),
      h(
        "td",
        { "data-label": "Progress", className: "progress-cell" },
        progressBar(job, `Progress of job ${shortId(job.id)}`),
        job.status === "running" ? h("div", { className: "muted small" }, stepText(p)) : null,
      ),
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
    // A malformed filter in the address is shown beside the box and not sent.
    if ("error" in parsed) return;
    try {
      const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (status) q.set("status", status);
      for (const [k, v] of labels) q.set(`metadata[${k}]`, v);
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

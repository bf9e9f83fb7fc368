// The caller's jobs, newest first: the list is read every few seconds (new jobs appear), and each
// unfinished job on it is followed live through its event stream (status and progress).
import { api, followJob, TERMINAL, type Job } from "./api.ts";
import { formatAgo, formatDuration, h, replace } from "./dom.ts";
import { progressBar, shortId, statusBadge, stepText } from "./widgets.ts";

const REFRESH_MS = 3000;
/** Streams open at once from the list (the server allows 100 per caller). */
const MAX_STREAMS = 20;

/** Renders the list into `root`; returns the function that stops its timers and streams. */
export function jobsView(root: HTMLElement, onError: (err: unknown) => void): () => void {
  const jobs = new Map<string, Job>();
  const streams = new Map<string, AbortController>();
  let order: string[] = [];
  let stopped = false;
  let timer: number | undefined;

  const body = h("tbody");
  const empty = h("p", { className: "empty", hidden: true }, "No jobs yet. ", h("a", { href: "#/submit" }, "Submit a workflow"), " to get started.");
  const live = h("p", { className: "sr-only", "aria-live": "polite", id: "jobs-live" });
  replace(
    root,
    h("div", { className: "page-head" }, h("h1", { tabindex: -1 }, "Jobs"), h("a", { className: "button", href: "#/submit" }, "New job")),
    live,
    h(
      "div",
      { className: "card table-card" },
      h(
        "table",
        { className: "jobs" },
        h("caption", { className: "sr-only" }, "Your jobs, newest first"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Job"), h("th", { scope: "col" }, "Status"), h("th", { scope: "col" }, "Progress"), h("th", { scope: "col" }, "Created"), h("th", { scope: "col" }, "Duration"))),
        body,
      ),
      empty,
    ),
  );

  const row = (job: Job): HTMLTableRowElement => {
    const p = job.progress;
    const duration = job.started_at ? formatDuration((job.completed_at ? Date.parse(job.completed_at) : Date.now()) - Date.parse(job.started_at)) : "—";
    return h(
      "tr",
      { "data-job-id": job.id, "data-status": job.status },
      h("td", {}, h("a", { href: `#/jobs/${job.id}`, className: "mono", "aria-label": `Job ${job.id}` }, shortId(job.id)), job.outputs.length > 0 ? h("span", { className: "muted small" }, ` · ${job.outputs.length} output${job.outputs.length === 1 ? "" : "s"}`) : null),
      h("td", {}, statusBadge(job.status)),
      h("td", {}, progressBar(job, `Progress of job ${shortId(job.id)}`), job.status === "running" ? h("div", { className: "muted small" }, stepText(p)) : null),
      h("td", { className: "muted" }, h("time", { datetime: job.created_at }, formatAgo(job.created_at))),
      h("td", { className: "muted" }, duration),
    );
  };

  const render = () => {
    replace(body, ...order.map((id) => row(jobs.get(id)!)));
    empty.hidden = order.length > 0;
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
      const page = await api<{ jobs: Job[] }>("GET", "/api/v2/jobs?limit=50");
      if (stopped) return;
      for (const job of page.jobs) {
        // A streamed job keeps its live state; the others take the list's.
        if (!streams.has(job.id) || !jobs.has(job.id)) jobs.set(job.id, job);
      }
      order = page.jobs.map((j) => j.id);
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
    for (const c of streams.values()) c.abort();
  };
}

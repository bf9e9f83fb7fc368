// One job: status, progress and step, its labels, the latest preview, outputs by type as they arrive, the
// error with its node (marked in the workflow), the captured log where the surface has one, and
// cancel. Events only update the state; the page is drawn at most once per animation frame, so
// a stream of previews never shows more than one image a frame.
import { api, ApiError, followJobToEnd, resolveLink, TERMINAL, type Job, type Output } from "./api.ts";
import { formatBytes, formatDuration, h, replace } from "./dom.ts";
import type { Graph } from "./graph.ts";
import { labelChips, progressBar, statusBadge, stepText } from "./widgets.ts";

/** Renders job `id` into `root`; returns the function that closes its stream. */
export function jobView(root: HTMLElement, id: string, onError: (err: unknown) => void): () => void {
  const controller = new AbortController();
  let job: Job | null = null;
  const outputs = new Map<string, Output>();
  let preview: { src: string; node: string } | null = null;
  let shownOutputs = 0;
  /** The event stream was lost and is being reopened (the job is read meanwhile). */
  let reconnecting = false;

  const head = h("div", { className: "page-head" });
  const summary = h("section", { className: "card", "aria-labelledby": "status-title" });
  const previewBox = h("section", { className: "card", "aria-labelledby": "preview-title", hidden: true });
  const outputBox = h("section", { className: "card", "aria-labelledby": "outputs-title", hidden: true });
  const errorBox = h("section", { className: "card error-card", role: "alert", hidden: true });
  const logBox = h("section", { className: "card", "aria-labelledby": "log-title", hidden: true });
  const graphBox = h("section", { className: "card", "aria-labelledby": "graph-title", hidden: true });
  let graph: Graph | null = null;
  const live = h("p", { className: "sr-only", "aria-live": "polite", id: "job-live" });
  summary.classList.add("job-summary");
  previewBox.classList.add("job-preview-card");
  // On a narrow screen the columns become one: status, then the preview, then the rest (style.css).
  replace(
    root,
    h("p", { className: "crumbs" }, h("a", { href: "#/" }, "← Jobs")),
    head,
    live,
    h("div", { className: "job-grid" }, h("div", { className: "job-main" }, summary, errorBox, outputBox, logBox, graphBox), previewBox),
  );
  let frame = 0;
  const scheduleRender = () => {
    frame ||= requestAnimationFrame(() => {
      frame = 0;
      render();
    });
  };

  const cancel = async () => {
    if (!job) return;
    try {
      job = await api<Job>("POST", new URL(resolveLink(job.urls.cancel)).pathname);
      render();
    } catch (err) {
      onError(err);
    }
  };

  const render = () => {
    if (!job) return;
    const active = !TERMINAL.includes(job.status);
    replace(
      head,
      h("h1", { tabindex: -1 }, "Job ", h("span", { className: "mono" }, job.id)),
      active && job.status !== "canceling" ? h("button", { type: "button", className: "danger", id: "cancel-job", onclick: cancel }, "Cancel job") : null,
    );
    const times: [string, string][] = [["Created", new Date(job.created_at).toLocaleString()]];
    if (job.queue_position !== null && job.queue_position !== undefined) times.push(["Queue position", String(job.queue_position)]);
    if (job.metrics?.queue_ms != null) times.push(["Queued for", formatDuration(job.metrics.queue_ms)]);
    if (job.metrics?.execution_ms != null) times.push(["Ran for", formatDuration(job.metrics.execution_ms)]);
    replace(
      summary,
      h("h2", { id: "status-title" }, "Status"),
      h(
        "div",
        { className: "status-line" },
        h("span", { id: "job-status" }, statusBadge(job.status)),
        progressBar(job, "Job progress"),
        active && reconnecting ? h("span", { className: "muted small", id: "job-reconnecting" }, "Reconnecting…") : null,
      ),
      h("p", { className: "muted", id: "job-step" }, job.status === "running" ? stepText(job.progress) || "Starting…" : (job.progress?.message ?? "")),
      h("dl", { className: "facts" }, ...times.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      labelChips(job.metadata, "job-labels"),
    );
    if (job.error) {
      errorBox.hidden = false;
      const where = job.error.node_id ? ` in node ${job.error.node_id}${job.error.class_type ? ` (${job.error.class_type})` : ""}` : "";
      replace(
        errorBox,
        h("h2", {}, "Error"),
        h("p", {}, h("code", {}, job.error.code), where),
        h("p", { id: "job-error" }, job.error.message),
        job.error.traceback ? h("details", {}, h("summary", {}, "Traceback"), h("pre", {}, job.error.traceback)) : null,
      );
    } else errorBox.hidden = true;
    for (const o of job.outputs) outputs.set(o.id, o);
    // Outputs are rebuilt only when one arrives, so players and images do not reload.
    if (outputs.size !== shownOutputs) {
      shownOutputs = outputs.size;
      outputBox.hidden = false;
      replace(
        outputBox,
        h("h2", { id: "outputs-title" }, `Outputs (${outputs.size})`),
        h("ul", { className: "outputs", id: "job-outputs" }, ...[...outputs.values()].map(outputItem)),
      );
    }
    if (graph) renderGraph(job);
    const logs = (job as Job & { logs?: { text: string; truncated: boolean } | null }).logs;
    logBox.hidden = !logs;
    if (logs)
      replace(
        logBox,
        h("h2", { id: "log-title" }, "Log"),
        logs.truncated ? h("p", { className: "muted small" }, "Only the end of the log was kept.") : null,
        h("pre", { className: "log" }, logs.text),
      );
    // A finished job shows its outputs; the last live frame of it would only repeat them, stale.
    if (!active) previewBox.hidden = true;
    else if (preview) {
      previewBox.hidden = false;
      let img = previewBox.querySelector("img");
      if (!img) {
        img = h("img", { id: "job-preview" });
        replace(previewBox, h("h2", { id: "preview-title" }, "Live preview"), img);
      }
      if (img.getAttribute("src") !== preview.src) img.src = preview.src;
      img.alt = `Live preview of node ${preview.node}`;
    }
  };

  /** The graph's nodes, the running one marked, and the one that failed. */
  let shownCurrent: string | null | undefined;
  let shownFailed: string | null | undefined;
  const renderGraph = (j: Job) => {
    const current = j.status === "running" ? (j.progress?.current_node ?? null) : null;
    const failed = j.error?.node_id ?? null;
    if (!graphBox.hidden && current === shownCurrent && failed === shownFailed) return; // progress events repeat the node
    shownCurrent = current;
    shownFailed = failed;
    graphBox.hidden = false;
    const open = graphBox.querySelector("details")?.open ?? false;
    replace(
      graphBox,
      h("h2", { id: "graph-title" }, "Workflow"),
      h(
        "ol",
        { className: "nodes" },
        ...Object.entries(graph!).map(([nodeId, node]) =>
          h(
            "li",
            {
              className: nodeId === current ? "current" : nodeId === failed ? "failing" : "",
              "aria-current": nodeId === current ? "step" : false,
              "data-node": nodeId,
            },
            h("span", { className: "node-id mono" }, nodeId),
            h("span", {}, node.class_type ?? "?"),
            node._meta?.title ? h("span", { className: "muted" }, ` “${node._meta.title}”`) : null,
            nodeId === current ? h("span", { className: "badge badge-running" }, "running") : null,
            nodeId === failed ? h("span", { className: "badge badge-failed" }, "failed here") : null,
          ),
        ),
      ),
      h("details", { open }, h("summary", {}, "API-format JSON"), h("pre", {}, JSON.stringify(graph, null, 2))),
    );
  };

  const load = async () => {
    try {
      job = await api<Job>("GET", `/api/v2/jobs/${encodeURIComponent(id)}`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        replace(head, h("h1", { tabindex: -1 }, "Job not found"));
        return;
      }
      return onError(err);
    }
    render();
    void api<{ workflow: typeof graph }>("GET", `/api/v2/jobs/${encodeURIComponent(id)}/workflow`).then(
      (w) => {
        graph = w.workflow;
        scheduleRender();
      },
      () => undefined, // the page works without it
    );
    if (TERMINAL.includes(job.status)) return;
    // Until the job is terminal: a dropped stream is reopened, the job read meanwhile.
    await followJobToEnd(
      id,
      (e) => {
        if (!job) return;
        if (e.event === "status") {
          if (e.data.status !== job.status) live.textContent = `Job ${e.data.status}`;
          job = e.data as Job;
        } else if (e.event === "progress") job = { ...job, progress: e.data };
        else if (e.event === "preview") preview = { src: `data:${e.data.content_type};base64,${e.data.data_base64}`, node: e.data.node_id };
        else if (e.event === "output") outputs.set(e.data.id, e.data);
        scheduleRender();
      },
      (state) => {
        if (state === "lost" && !reconnecting) live.textContent = "Connection lost, reconnecting…";
        reconnecting = state === "lost";
        scheduleRender();
      },
      controller.signal,
    ).catch(onError);
    reconnecting = false;
    scheduleRender();
  };
  void load();
  return () => {
    controller.abort();
    cancelAnimationFrame(frame);
  };
}

/** An output shown by its type: images inline, audio and video in players, text, a link otherwise. */
function outputItem(o: Output): HTMLElement {
  const url = resolveLink(o.url);
  let view: HTMLElement | null = null;
  if (o.type === "image") view = h("img", { src: url, alt: `${o.name}, output of node ${o.node_id}`, loading: "lazy" });
  else if (o.type === "video") view = h("video", { src: url, controls: true, preload: "metadata", "aria-label": o.name });
  else if (o.type === "audio") view = h("audio", { src: url, controls: true, preload: "metadata", "aria-label": o.name });
  else if (o.type === "text") {
    const pre = h("pre", { className: "text-output" }, "…");
    void fetch(url)
      .then((r) => r.text())
      .then(
        (t) => (pre.textContent = t),
        () => (pre.textContent = "(could not load the text)"),
      );
    view = pre;
  }
  return h(
    "li",
    { className: `output output-${o.type}`, "data-output-type": o.type },
    view,
    h(
      "div",
      { className: "output-meta" },
      h("a", { href: url, download: o.name }, o.name),
      // Each fact stays on one line ("1.2 MB" never splits); the line breaks between them.
      " ",
      ...[o.type, o.content_type, formatBytes(o.size_bytes), `node ${o.node_id}`].flatMap((fact, i) => [
        i > 0 ? h("span", { className: "muted small" }, " · ") : null,
        h("span", { className: "muted small nowrap" }, fact),
      ]),
    ),
  );
}

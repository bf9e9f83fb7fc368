// Submitting a workflow: paste API-format JSON, drop or choose a file, or start from an example;
// the contract's validation errors are listed per node.
import audio from "../../examples/audio.json" with { type: "json" };
import delay from "../../examples/delay.json" with { type: "json" };
import sampler from "../../examples/sampler-previews.json" with { type: "json" };
import video from "../../examples/video.json" with { type: "json" };
import { api, ApiError, type Job } from "./api.ts";
import { h, replace } from "./dom.ts";

const EXAMPLES: Record<string, { label: string; graph: unknown }> = {
  sampler: { label: "Procedural sampler with live previews (40 steps)", graph: sampler },
  delay: { label: "A 30 s delay (to try cancel)", graph: delay },
  audio: { label: "A 2 s sine tone (FLAC)", graph: audio },
  video: { label: "Three frames as a WebM video", graph: video },
};

/** Renders the form into `root`; `onSubmitted` gets the new job. */
export function submitView(root: HTMLElement, onSubmitted: (job: Job) => void): () => void {
  const textarea = h("textarea", {
    id: "workflow",
    name: "workflow",
    rows: 18,
    spellcheck: "false",
    "aria-describedby": "workflow-help",
    placeholder: '{\n  "1": {"class_type": "EmptyImage", "inputs": {"width": 64, "height": 64, "batch_size": 1, "color": 16711680}},\n  "2": {"class_type": "SaveImage", "inputs": {"images": ["1", 0], "filename_prefix": "hello"}}\n}',
  });
  const errors = h("div", { id: "submit-errors", role: "alert" });
  const button = h("button", { type: "submit", id: "submit-job" }, "Submit job");
  const fileInput = h("input", { type: "file", id: "workflow-file", accept: "application/json,.json", className: "sr-only", tabindex: -1, "aria-label": "Workflow file" });
  const example = h(
    "select",
    { id: "example" },
    h("option", { value: "" }, "Load an example…"),
    ...Object.entries(EXAMPLES).map(([key, e]) => h("option", { value: key }, e.label)),
  );

  const setText = (text: string) => {
    textarea.value = text;
    replace(errors);
  };
  example.addEventListener("change", () => {
    const chosen = EXAMPLES[example.value];
    if (chosen) setText(JSON.stringify(withFreshSeed(chosen.graph), null, 2));
  });
  fileInput.addEventListener("change", async () => {
    const file = fileInput.files?.[0];
    if (file) setText(await file.text());
  });

  const drop = h(
    "div",
    { className: "dropzone", id: "dropzone" },
    textarea,
    h("p", { id: "workflow-help", className: "muted small" }, "Paste a workflow in ComfyUI's API format (File → Export (API)), drop a .json file here, or ", h("button", { type: "button", className: "linkish", onclick: () => fileInput.click() }, "choose a file"), ". A body with a top-level ", h("code", {}, "workflow"), " (and ", h("code", {}, "extra_data"), ") is sent as it is."),
  );
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("dragging");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("dragging"));
  drop.addEventListener("drop", async (e) => {
    e.preventDefault();
    drop.classList.remove("dragging");
    const file = e.dataTransfer?.files[0];
    if (file) setText(await file.text());
  });

  const form = h(
    "form",
    { className: "card", "aria-labelledby": "submit-title", novalidate: true },
    h("div", { className: "form-row" }, h("label", { for: "workflow" }, "Workflow (API format JSON)"), example),
    drop,
    fileInput,
    errors,
    h("div", { className: "actions" }, button),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(errors);
    let parsed: unknown;
    try {
      parsed = JSON.parse(textarea.value);
    } catch (err) {
      replace(errors, h("p", { className: "error" }, `This is not valid JSON: ${(err as Error).message}`));
      return textarea.focus();
    }
    const body = isRecord(parsed) && isRecord(parsed.workflow) ? parsed : { workflow: parsed };
    button.disabled = true;
    button.textContent = "Submitting…";
    try {
      onSubmitted(await api<Job>("POST", "/api/v2/jobs", body, { "idempotency-key": crypto.randomUUID() }));
    } catch (err) {
      replace(errors, ...describeError(err, isRecord(body.workflow) ? body.workflow : {}));
    } finally {
      button.disabled = false;
      button.textContent = "Submit job";
    }
  });

  replace(root, h("div", { className: "page-head" }, h("h1", { id: "submit-title", tabindex: -1 }, "Submit a workflow")), form);
  return () => undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A new seed for sampler examples, so the engine's cache does not answer at once. */
function withFreshSeed(graph: unknown): unknown {
  const copy = structuredClone(graph) as Record<string, { class_type?: string; inputs?: Record<string, unknown> }>;
  for (const node of Object.values(copy)) if (node.inputs && "seed" in node.inputs) node.inputs.seed = Math.floor(Math.random() * 1_000_000);
  return copy;
}

/** The error answer as people read it: per node for invalid_workflow, per field for invalid_request. */
function describeError(err: unknown, workflow: Record<string, unknown>): HTMLElement[] {
  if (!(err instanceof ApiError)) return [h("p", { className: "error" }, `The request failed: ${(err as Error)?.message ?? err}`)];
  const out: HTMLElement[] = [h("p", { className: "error" }, h("strong", {}, err.code), ` (${err.status}): ${err.message}`)];
  const nodeErrors = err.details?.node_errors as Record<string, { field: string; reason: string; message?: string }[]> | undefined;
  if (nodeErrors) {
    out.push(
      h(
        "ul",
        { className: "node-errors", id: "node-errors" },
        ...Object.entries(nodeErrors).map(([node, problems]) => {
          const cls = (workflow[node] as { class_type?: unknown } | undefined)?.class_type;
          return h(
            "li",
            { "data-node": node },
            h("strong", {}, node === "" ? "Workflow" : `Node ${node}`),
            typeof cls === "string" ? h("span", { className: "muted" }, ` (${cls})`) : null,
            h("ul", {}, ...problems.map((p) => h("li", {}, h("code", {}, p.field || "(node)"), ` ${p.reason}`, p.message ? ` — ${p.message}` : ""))),
          );
        }),
      ),
    );
  }
  const fields = err.details?.fields as { field: string; reason: string }[] | undefined;
  if (fields) out.push(h("ul", { className: "node-errors" }, ...fields.map((f) => h("li", {}, h("code", {}, f.field || "(body)"), ` ${f.reason}`))));
  return out;
}

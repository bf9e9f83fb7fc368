// Submitting a workflow: paste API-format JSON, drop or choose a file, or start from an example;
// upload an input image and have it put into the graph's LoadImage; the contract's validation
// errors are shown in words on the graph's nodes, the failing ones marked.
import audio from "../../examples/audio.json" with { type: "json" };
import delay from "../../examples/delay.json" with { type: "json" };
import pipeline from "../../examples/image-pipeline.json" with { type: "json" };
import sampler from "../../examples/sampler-previews.json" with { type: "json" };
import video from "../../examples/video.json" with { type: "json" };
import { api, ApiError, uploadAsset, type Asset, type Job, type NodeError } from "./api.ts";
import { formatBytes, h, replace } from "./dom.ts";
import type { Graph } from "./graph.ts";
import { parseLabels } from "./widgets.ts";

/** Nodes listed with the errors; a larger graph lists only its failing nodes. */
const LIST_ALL_NODES_UP_TO = 40;

const EXAMPLES: Record<string, { label: string; graph: unknown }> = {
  sampler: { label: "Procedural sampler with live previews (40 steps)", graph: sampler },
  delay: { label: "A 30 s delay (to try cancel)", graph: delay },
  pipeline: { label: "Scale and invert an image you upload", graph: pipeline },
  audio: { label: "A 2 s sine tone (FLAC)", graph: audio },
  video: { label: "Three frames as a WebM video", graph: video },
};

/** Renders the form into `root`; `onSubmitted` gets the new job. */
export function submitView(root: HTMLElement, onSubmitted: (job: Job) => void, onError: (err: unknown) => void): () => void {
  const textarea = h("textarea", {
    id: "workflow",
    name: "workflow",
    rows: 18,
    spellcheck: "false",
    "aria-describedby": "workflow-help",
    placeholder:
      '{\n  "1": {"class_type": "EmptyImage", "inputs": {"width": 64, "height": 64, "batch_size": 1, "color": 16711680}},\n  "2": {"class_type": "SaveImage", "inputs": {"images": ["1", 0], "filename_prefix": "hello"}}\n}',
  });
  const errors = h("div", { id: "submit-errors", role: "alert" });
  const button = h("button", { type: "submit", id: "submit-job" }, "Submit job");
  const fileInput = h("input", {
    type: "file",
    id: "workflow-file",
    accept: "application/json,.json",
    className: "sr-only",
    tabindex: -1,
    "aria-label": "Workflow file",
  });
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
    h(
      "p",
      { id: "workflow-help", className: "muted small" },
      "Paste a workflow in ComfyUI's API format (File → Export (API)), drop a .json file here, or ",
      h("button", { type: "button", className: "linkish", onclick: () => fileInput.click() }, "choose a file"),
      ". A body with a top-level ",
      h("code", {}, "workflow"),
      " (and ",
      h("code", {}, "extra_data"),
      ") is sent as it is.",
    ),
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

  // An input image: uploaded as an asset, then put into the graph's empty LoadImage (or its first one).
  const imageInput = h("input", { type: "file", id: "input-image", accept: "image/*", "aria-describedby": "input-image-help" });
  const uploaded = h("div", { id: "upload-result", "aria-live": "polite" });
  imageInput.addEventListener("change", async () => {
    const file = imageInput.files?.[0];
    if (!file) return;
    replace(uploaded, h("p", { className: "muted small" }, `Uploading ${file.name}…`));
    let asset: Asset;
    try {
      asset = await uploadAsset(file);
    } catch (err) {
      replace(
        uploaded,
        h("p", { className: "error" }, `The upload failed: ${err instanceof ApiError ? `${err.code}: ${err.message}` : (err as Error).message}`),
      );
      if (err instanceof ApiError && err.status === 401) onError(err);
      return;
    } finally {
      imageInput.value = "";
    }
    const ref = { __type: "core/ASSET", info: { id: asset.id } };
    const placed = placeImage(textarea.value, ref);
    if (placed.text !== null) textarea.value = placed.text;
    replace(
      uploaded,
      h(
        "div",
        { className: "uploaded" },
        h("img", { src: asset.url, alt: `The uploaded image ${asset.file_path ?? ""}` }),
        h(
          "div",
          {},
          h(
            "p",
            {},
            h("strong", {}, asset.file_path ?? "image"),
            h("span", { className: "muted small" }, ` · ${asset.content_type} · ${formatBytes(asset.size_bytes)}`),
          ),
          h(
            "p",
            { className: "small", id: "upload-placed" },
            placed.node !== null
              ? `Put into node ${placed.node} (LoadImage) as a core/ASSET reference.`
              : "No LoadImage in the workflow yet: give this reference to a LoadImage's image input:",
          ),
          placed.node === null ? h("pre", { className: "small" }, JSON.stringify(ref)) : null,
        ),
      ),
    );
  });
  const upload = h(
    "div",
    { className: "upload-row" },
    h("label", { for: "input-image" }, "Input image for LoadImage"),
    imageInput,
    h("p", { id: "input-image-help", className: "muted small" }, "Uploaded to your assets and put into the workflow's empty LoadImage (or its first one)."),
    uploaded,
  );

  // Labels stored with the job (`metadata`), as the list's filter box takes them.
  const labelsInput = h("input", {
    id: "job-labels-input",
    placeholder: "project=cats run=1",
    autocomplete: "off",
    spellcheck: false,
    "aria-describedby": "job-labels-help",
  });
  const labelsRow = h(
    "div",
    { className: "upload-row" },
    h("label", { for: "job-labels-input" }, "Labels (optional)"),
    labelsInput,
    h(
      "p",
      { id: "job-labels-help", className: "muted small" },
      "key=value, separated by spaces (up to 16, never secrets): shown with the job and usable as a filter of the list.",
    ),
  );

  const form = h(
    "form",
    { className: "card", "aria-labelledby": "submit-title", novalidate: true },
    h("div", { className: "form-row" }, h("label", { for: "workflow" }, "Workflow (API format JSON)"), example),
    drop,
    fileInput,
    upload,
    labelsRow,
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
    const body: Record<string, unknown> = isRecord(parsed) && isRecord(parsed.workflow) ? parsed : { workflow: parsed };
    const labels = parseLabels(labelsInput.value.split(/\s+/).filter(Boolean), "job");
    if ("error" in labels) {
      replace(errors, h("p", { className: "error" }, labels.error));
      return labelsInput.focus();
    }
    // The box adds to the labels a pasted body carries; a key in both takes the box's value.
    if (labels.labels.length > 0) body.metadata = { ...(isRecord(body.metadata) ? body.metadata : {}), ...Object.fromEntries(labels.labels) };
    button.disabled = true;
    button.textContent = "Submitting…";
    try {
      onSubmitted(await api<Job>("POST", "/api/v2/jobs", body, { "idempotency-key": crypto.randomUUID() }));
    } catch (err) {
      replace(errors, ...describeError(err, isRecord(body.workflow) ? (body.workflow as Graph) : {}, textarea));
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

/**
 * Puts an image reference into the graph's LoadImage whose image is empty (else its first
 * LoadImage): the new JSON text and the node, or nulls when the text is not a graph with one.
 */
function placeImage(text: string, ref: unknown): { text: string | null; node: string | null } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { text: null, node: null };
  }
  const graph = isRecord(parsed) && isRecord(parsed.workflow) ? parsed.workflow : parsed;
  if (!isRecord(graph)) return { text: null, node: null };
  const loaders = Object.entries(graph).filter(([, n]) => isRecord(n) && n.class_type === "LoadImage") as [string, { inputs?: Record<string, unknown> }][];
  const target = loaders.find(([, n]) => !n.inputs?.image) ?? loaders[0];
  if (!target) return { text: null, node: null };
  target[1].inputs = { ...target[1].inputs, image: ref };
  return { text: JSON.stringify(parsed, null, 2), node: target[0] };
}

/** Selects a node's entry in the JSON text, so the failing node is found where it is written. */
function selectNode(textarea: HTMLTextAreaElement, id: string): void {
  const key = JSON.stringify(id);
  const at = textarea.value.search(new RegExp(`${key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*:`));
  if (at < 0) return;
  textarea.focus();
  textarea.setSelectionRange(at, at + key.length);
}

/** The error answer as people read it: the graph's nodes with the failing ones marked and their errors in words, or the request's fields. */
function describeError(err: unknown, workflow: Graph, textarea: HTMLTextAreaElement): HTMLElement[] {
  if (!(err instanceof ApiError)) return [h("p", { className: "error" }, `The request failed: ${(err as Error)?.message ?? err}`)];
  const nodeErrors = err.details?.node_errors as Record<string, NodeError[]> | undefined;
  const failing = Object.keys(nodeErrors ?? {}).filter((id) => id !== "").length;
  const out: HTMLElement[] = [
    h(
      "p",
      { className: "error" },
      h("strong", {}, err.code),
      ` (${err.status}): ${err.message}`,
      nodeErrors && failing > 0 ? ` ${failing} node${failing === 1 ? " has" : "s have"} errors, marked below.` : "",
    ),
  ];
  if (nodeErrors) {
    const problems = (list: NodeError[]) =>
      h(
        "ul",
        { className: "problems" },
        ...list.map((p) =>
          h(
            "li",
            {},
            p.message ?? `${p.field || "(node)"} ${p.reason}`,
            " ",
            h("code", { className: "reason" }, p.field ? `${p.field}: ${p.reason}` : p.reason),
          ),
        ),
      );
    const ids = Object.keys(workflow);
    const shown = ids.length <= LIST_ALL_NODES_UP_TO ? ids : ids.filter((id) => nodeErrors[id]);
    // Errors of nodes not in the graph as sent (a body the server read differently) are listed too.
    for (const id of Object.keys(nodeErrors)) if (id !== "" && !shown.includes(id)) shown.push(id);
    out.push(
      h(
        "ul",
        { className: "node-errors nodes", id: "node-errors" },
        nodeErrors[""]
          ? h("li", { className: "failing", "data-node": "" }, h("div", { className: "node-line" }, h("strong", {}, "Workflow")), problems(nodeErrors[""]))
          : null,
        ...shown.map((id) => {
          const list = nodeErrors[id];
          const cls = workflow[id]?.class_type;
          return h(
            "li",
            { "data-node": id, className: list ? "failing" : "ok" },
            h(
              "div",
              { className: "node-line" },
              h("strong", {}, `Node ${id}`),
              typeof cls === "string" ? h("span", { className: "muted" }, ` (${cls})`) : null,
              list
                ? h("span", { className: "badge badge-failed" }, `${list.length} error${list.length === 1 ? "" : "s"}`)
                : h("span", { className: "ok-mark", "aria-label": "no errors" }, "✓"),
              list ? h("button", { type: "button", className: "linkish small", onclick: () => selectNode(textarea, id) }, "Show in JSON") : null,
            ),
            list ? problems(list) : null,
          );
        }),
      ),
    );
  }
  const fields = err.details?.fields as NodeError[] | undefined;
  if (fields)
    out.push(
      h(
        "ul",
        { className: "node-errors" },
        ...fields.map((f) => h("li", {}, h("code", {}, f.field || "(body)"), ` ${f.reason}`, f.message ? `: ${f.message}` : "")),
      ),
    );
  return out;
}

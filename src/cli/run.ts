// `flowgate run <graph.json>`: upload the named inputs, submit, show live progress, write
// previews when asked, download the outputs, and exit non-zero with the job's error on failure.
// Ctrl-C cancels the job on the server before exiting.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FlowgateClient } from "../client/v2-client.ts";
import type { DownloadResult } from "../client/download.ts";
import { assetReference, type Job, type Workflow } from "../client/types.ts";
import { CONNECTION_FLAGS, helpText, labelFlags, onePositional, parseCommand, stringFlag, UsageError, type CommandSpec } from "./command.ts";
import { clientFrom, describeError } from "./connection.ts";
import { parseInputFlag, resolveInputTarget, setInput } from "./graph-inputs.ts";
import { invokedAs } from "./invocation.ts";
import { jobErrorText } from "./job-text.ts";
import { ProgressView, type ProgressMode } from "./progress-view.ts";
import { parseJson } from "../domain/exact-json.ts";

/** Flags and help of `flowgate run`. */
export const RUN: CommandSpec = {
  name: "run",
  summary: "Run a workflow graph (API format) and download its outputs.",
  synopsis: "run <graph.json> [--input NAME=PATH ...] [--out DIR] [--previews] [flags]",
  flags: {
    input: { type: "string", multiple: true, arg: "NAME=PATH", help: "upload PATH and put its core/ASSET reference in input NAME" },
    label: { type: "string", multiple: true, arg: "KEY=VALUE", help: "a label stored with the job, shown on every view of it (never a secret)" },
    out: { type: "string", arg: "DIR", help: "folder for outputs (and previews) (default ./outputs)" },
    previews: { type: "boolean", help: "write live previews to DIR/previews" },
    "no-download": { type: "boolean", help: "do not download the outputs" },
    "partner-key": { type: "string", env: "FLOWGATE_PARTNER_KEY", arg: "KEY", help: "API key for partner nodes (extra_data.api_key_vendor_org)" },
    progress: { type: "string", arg: "MODE", help: "bar, plain or none (default: bar on a terminal, plain otherwise)" },
    ...CONNECTION_FLAGS,
  },
  details: `
NAME addresses an input of the graph:
  NODE.INPUT   input INPUT of node NODE
  NODE         the node's file input (the one of image, audio, video, file it has)
NODE is a node id, or a node's _meta.title (titles must be unique). For example
--input image=cat.png fills the file input of the node titled "image", and
--input 4.image=cat.png the input "image" of node 4.

Progress goes to stderr; the paths of downloaded files (or, with --json, one JSON
object {job, files, previews}) go to stdout. Exit status: 0 when the job succeeded,
1 when it failed, was canceled or expired (its error is printed), 2 on a usage
error, 130 after Ctrl-C, which cancels the job on the server first.`,
};

/** What `run` decided from its flags. */
interface RunSettings {
  graphPath: string;
  inputs: Array<{ name: string; path: string }>;
  outDir: string;
  previews: boolean;
  download: boolean;
  partnerKey: string | undefined;
  labels: Record<string, string> | undefined;
  mode: ProgressMode;
  json: boolean;
}

function settingsOf(parsed: ReturnType<typeof parseCommand>): RunSettings {
  const mode = stringFlag(parsed.values, "progress") ?? (process.stderr.isTTY ? "bar" : "plain");
  if (!["bar", "plain", "none"].includes(mode)) throw new UsageError(`--progress must be bar, plain or none, got "${mode}"`);
  let inputs;
  try {
    inputs = ((parsed.values.input as string[] | undefined) ?? []).map(parseInputFlag);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return {
    graphPath: onePositional(parsed, "graph file"),
    inputs,
    outDir: stringFlag(parsed.values, "out") ?? "outputs",
    previews: parsed.values.previews === true,
    download: parsed.values["no-download"] !== true,
    partnerKey: stringFlag(parsed.values, "partner-key"),
    labels: labelFlags(parsed.values.label),
    mode: parsed.values.json === true && stringFlag(parsed.values, "progress") === undefined ? "none" : (mode as ProgressMode),
    json: parsed.values.json === true,
  };
}

/** Reads the graph file: a JSON object in the API format. */
async function readGraph(path: string): Promise<Workflow> {
  let graph: unknown;
  try {
    graph = parseJson(await readFile(path, "utf8"));
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  if (typeof graph !== "object" || graph === null || Array.isArray(graph)) throw new UsageError(`${path} is not a JSON object`);
  return graph as Workflow;
}

/** Uploads each --input and puts its asset reference in the graph. */
async function attachInputs(
  client: FlowgateClient,
  graph: Workflow,
  inputs: RunSettings["inputs"],
  view: ProgressView,
  signal: AbortSignal,
): Promise<Workflow> {
  for (const { name, path } of inputs) {
    let target;
    try {
      target = resolveInputTarget(graph, name);
    } catch (err) {
      throw new UsageError(`--input ${name}: ${(err as Error).message}`);
    }
    const { asset, reused } = await client.uploadAsset(path, { signal });
    view.note(`input ${name} -> node ${target.nodeId}.${target.input}: ${path} (${reused ? "already on the server" : "uploaded"}, asset ${asset.id})`);
    graph = setInput(graph, target, assetReference(asset));
  }
  return graph;
}

/** `flowgate run` */
export async function run(argv: string[]): Promise<void> {
  const parsed = parseCommand(RUN, argv);
  if (parsed.help) return void process.stdout.write(helpText(RUN));
  const settings = settingsOf(parsed);
  const client = clientFrom(parsed);
  const view = new ProgressView(process.stderr, settings.mode);
  const stop = new AbortController();
  let job: Job | null = null;
  const interrupt = onInterrupt(() => job, client, view, stop);
  const { signal } = stop;
  const previews: string[] = [];
  const files: DownloadResult[] = [];
  try {
    const graph = await attachInputs(client, await readGraph(settings.graphPath), settings.inputs, view, signal);
    job = await client.submit(graph, {
      signal,
      ...(settings.partnerKey ? { extraData: { api_key_vendor_org: settings.partnerKey } } : {}),
      ...(settings.labels ? { metadata: settings.labels } : {}),
    });
    view.note(`job ${job.id} submitted`);
    view.job(job);
    for await (const event of client.stream(job, { signal })) {
      if (event.event === "status") view.job((job = event.data));
      else if (event.event === "progress") view.progress(event.data);
      else if (event.event === "preview" && settings.previews) previews.push(await savePreview(settings.outDir, event.data, previews.length + 1));
    }
    view.stop();
    if (job.status === "succeeded" && settings.download) {
      for (const output of job.outputs) files.push(await client.download(output, `${settings.outDir}/`, { signal }));
    }
  } catch (err) {
    if (signal.aborted) return void (await interrupt.done);
    throw err;
  } finally {
    view.stop();
    interrupt.dispose();
  }
  if (settings.json) process.stdout.write(`${JSON.stringify({ job, files, previews }, null, 2)}\n`);
  else for (const f of files) process.stdout.write(`${f.path}\n`);
  if (job.status !== "succeeded") {
    // The message says what went wrong; the engine's stack is for whoever debugs the node, on request.
    const traceback = job.error?.traceback ? `\n(the traceback: ${invokedAs()} status ${job.id})` : "";
    process.stderr.write(`flowgate run: job ${job.id} ${job.status}${job.error ? `\n${jobErrorText(job.error, false)}${traceback}` : ""}\n`);
    process.exitCode = 1;
  } else if (!settings.json) {
    process.stderr.write(`job ${job.id} succeeded: ${job.outputs.length} output(s)${settings.download ? ` in ${settings.outDir}` : ""}\n`);
  }
}

/** Writes one preview (base64 JPEG from the stream) as DIR/previews/NODE-NNNN.jpg. */
async function savePreview(outDir: string, preview: { node_id: string; content_type: string; data_base64: string }, n: number): Promise<string> {
  const dir = join(outDir, "previews");
  await mkdir(dir, { recursive: true });
  const ext = preview.content_type === "image/png" ? "png" : "jpg";
  const path = join(dir, `${preview.node_id.replace(/[^\w.-]/g, "_")}-${String(n).padStart(4, "0")}.${ext}`);
  await writeFile(path, Buffer.from(preview.data_base64, "base64"));
  return path;
}

/**
 * Ctrl-C: stop what is in flight, cancel the job on the server if there is one, then exit 130.
 * A second Ctrl-C exits at once.
 */
function onInterrupt(current: () => Job | null, client: FlowgateClient, view: ProgressView, stop: AbortController) {
  let resolveDone: () => void = () => undefined;
  const done = new Promise<void>((r) => (resolveDone = r));
  let count = 0;
  const handler = () => {
    if (++count > 1) process.exit(130);
    stop.abort(new Error("interrupted"));
    view.stop();
    process.exitCode = 130;
    const job = current();
    if (!job) {
      process.stderr.write("\ninterrupted before the job was submitted\n");
      return resolveDone();
    }
    process.stderr.write(`\ncanceling job ${job.id}...\n`);
    // A running job answers canceling; the last line waits for where it ends (a second Ctrl-C does not wait).
    client
      .cancel(job)
      .then((j) => (j.status === "canceling" ? client.wait(j) : j))
      .then(
        (j) => process.stderr.write(`job ${j.id} ${j.status}\n`),
        (err) => process.stderr.write(`flowgate run: could not cancel job ${job.id}: ${describeError(err)}\n`),
      )
      .finally(resolveDone);
  };
  process.on("SIGINT", handler);
  return { done, dispose: () => void process.off("SIGINT", handler) };
}

// WS: the hosted WebSocket at /ws on the origin: every connection of a caller gets the same
// messages, {type, data} JSON frames with prompt_id, the run's message types, exception types,
// big-endian binary previews, and file infos that /api/view serves.
import { check, type T } from "../../check.ts";
import { hostedOnly, queuePromptOk, view, whenStarted } from "../support/hosted-client.ts";
import { failingGraph, endedEarlyGraph, stepsGraph } from "../support/jobs.ts";
import { HostedSocket, type JsonMessage } from "../../machinery/socket.ts";
import { nonce, printGraph, simpleGraph, type Graph } from "../support/workflows.ts";
import { imageFacts } from "../support/images.ts";

const H = { when: hostedOnly };
const ENDINGS = new Set(["execution_success", "execution_error", "execution_interrupted"]);
const EXCEPTIONS = ["ValidationError", "ModelDownloadError", "ImageDownloadError", "OOMError", "InsufficientFundsError", "InactiveSubscriptionError"];

async function socket(t: T, opts: Parameters<typeof HostedSocket.open>[1] = {}): Promise<HostedSocket> {
  const { socket, status } = await HostedSocket.open(t.http, opts);
  if (!socket) t.fail(`/ws refused the upgrade (${status})`);
  t.defer(async () => socket.close());
  return socket;
}

const isMarker = (m: JsonMessage) => m.type === "executing" && (m.data.node === null || m.data.node === "");

/** Waits for a prompt's terminal message (success, error or interrupted) and returns its messages. */
async function untilEnd(t: T, s: HostedSocket, id: string): Promise<JsonMessage[]> {
  const end = await s.waitFor((m) => m.kind === "json" && m.data.prompt_id === id && ENDINGS.has(m.type), t.options.jobTimeoutMs);
  if (!end) t.fail(`no execution_success, execution_error or execution_interrupted for prompt ${id} within ${t.options.jobTimeoutMs} ms`);
  return s.jobMessages(id);
}

export default [
  check("WS-1 /ws upgrades, and every connection of the caller gets the same messages whatever its clientId", H, async (t: T) => {
    const [a, b] = [await socket(t, { clientId: crypto.randomUUID() }), await socket(t, { clientId: crypto.randomUUID() })];
    const id = await queuePromptOk(t, simpleGraph());
    const [ma, mb] = [await untilEnd(t, a, id), await untilEnd(t, b, id)];
    // Up to the terminal message: the end marker may still be on its way.
    const types = (ms: JsonMessage[]) =>
      ms
        .slice(0, ms.findIndex((m) => ENDINGS.has(m.type)) + 1)
        .map((m) => m.type)
        .join(",");
    t.expect(types(ma) === types(mb), `the two connections got different messages: ${types(ma)} vs ${types(mb)}`);
  }),

  check("WS-2 text frames are JSON {type, data} and a job's messages carry data.prompt_id", H, async (t: T) => {
    const s = await socket(t);
    const id = await queuePromptOk(t, simpleGraph());
    await untilEnd(t, s, id);
    const json = s.messages.filter((m): m is JsonMessage => m.kind === "json");
    const jobTypes = new Set([
      "execution_start",
      "executing",
      "executed",
      "execution_cached",
      "execution_success",
      "execution_error",
      "execution_interrupted",
      "progress",
      "progress_state",
    ]);
    for (const m of json) if (jobTypes.has(m.type)) t.expect(typeof m.data.prompt_id === "string", `a ${m.type} message has no prompt_id`);
    t.expect(s.jobMessages(id).length > 0, `no message carried prompt_id ${id}`);
  }),

  check("WS-3 a run sends status, execution_start, executing, executed and execution_success; an empty node ends it", H, async (t: T) => {
    const s = await socket(t);
    const id = await queuePromptOk(t, simpleGraph());
    const ms = await untilEnd(t, s, id);
    const types = ms.map((m) => m.type);
    for (const type of ["execution_start", "executing", "executed", "execution_success"])
      t.expect(types.includes(type), `no ${type} message (got ${types.join(", ")})`);
    const executed = ms.find((m) => m.type === "executed" && m.data.node === "2");
    t.expect(
      !!executed && Array.isArray((executed.data.output as { images?: unknown[] })?.images),
      "no executed message for SaveImage (node 2) with output.images",
    );
    t.expect(
      s.messages.some((m) => m.kind === "json" && m.type === "status"),
      "no status message with queue_remaining",
    );
    // The seed does not require the end marker; where it is sent it marks the end, so nothing of the run follows it.
    const marker = ms.findIndex(isMarker);
    if (marker >= 0)
      t.expect(
        ms.slice(marker + 1).every((m) => isMarker(m)),
        `messages of the run follow the end marker: ${ms
          .slice(marker + 1)
          .map((m) => m.type)
          .join(", ")}`,
      );
  }),

  check("WS-4 a failing run sends execution_error with a known exception_type", H, async (t: T) => {
    const s = await socket(t);
    const id = await queuePromptOk(t, failingGraph(t));
    const ms = await untilEnd(t, s, id);
    const err = ms.find((m) => m.type === "execution_error");
    t.need(err, `the failing prompt sent no execution_error (got ${ms.map((m) => m.type).join(", ")})`);
    t.expect(
      EXCEPTIONS.includes(String(err.data.exception_type)),
      `exception_type ${JSON.stringify(err.data.exception_type)} is not one of ${EXCEPTIONS.join(", ")}`,
    );
  }),

  check("WS-5 previews arrive as big-endian binary frames (type 1, or type 4 after feature_flags)", H, async (t: T) => {
    const plain = await socket(t);
    const withMeta = await socket(t, { previewMetadata: true });
    const id = await queuePromptOk(t, stepsGraph(t));
    await untilEnd(t, plain, id);
    await untilEnd(t, withMeta, id);
    const frames = [...plain.messages, ...withMeta.messages].filter((m) => m.kind === "binary");
    t.expect(frames.length > 0, "a run with a stepped node sent no preview frame");
    for (const f of withMeta.messages) {
      if (f.kind !== "binary" || f.frameType !== 4) continue;
      t.expect(
        (f.metadata as { prompt_id?: unknown })?.prompt_id === id,
        `a type 4 frame names prompt ${JSON.stringify((f.metadata as { prompt_id?: unknown })?.prompt_id)}`,
      );
    }
  }),

  check("WS-5 a type 4 preview's metadata tells the image it carries and the node that is running", H, async (t: T) => {
    const s = await socket(t, { previewMetadata: true });
    const graph = stepsGraph(t);
    const id = await queuePromptOk(t, graph);
    await untilEnd(t, s, id);
    let running: string | null = null;
    let seen = 0;
    for (const m of s.messages) {
      if (m.kind === "json" && m.type === "executing" && m.data.prompt_id === id) running = typeof m.data.node === "string" ? m.data.node : null;
      if (m.kind !== "binary" || m.frameType !== 4) continue;
      const meta = (m.metadata ?? {}) as Record<string, unknown>;
      if (meta.prompt_id !== id) continue; // another prompt's, or WS-5's finding above
      seen++;
      const facts = imageFacts(m.image ?? new Uint8Array());
      const where = `a type 4 frame of node ${JSON.stringify(meta.node_id)}`;
      if (!facts) {
        t.expect(false, `${where}: its image's header cannot be read (neither a PNG nor a JPEG with a frame header)`);
        continue;
      }
      if (meta.image_type !== undefined)
        t.expect(meta.image_type === facts.format, `${where}: the metadata says image_type ${JSON.stringify(meta.image_type)}, the bytes are ${facts.format}`);
      t.expect(facts.width > 0 && facts.height > 0, `${where}: the image says it is ${facts.width}x${facts.height}`);
      t.expect(facts.whole, `${where}: the ${facts.format} bytes after the metadata are not one whole image (no end marker)`);
      t.expect(
        typeof meta.node_id === "string" && meta.node_id in graph,
        `${where}: node_id is no node of the submitted graph (${Object.keys(graph).join(", ")})`,
      );
      t.expect(meta.node_id === running, `${where} arrived while the socket's last executing message named node ${JSON.stringify(running)}`);
      if (meta.parent_node_id === null)
        t.expect(
          meta.real_node_id === meta.node_id,
          `${where}: a node of the submitted graph (parent_node_id null) has real_node_id ${JSON.stringify(meta.real_node_id)}`,
        );
    }
    t.need(seen > 0, "the stepped run sent no type 4 preview to a connection that asked for them (previews are optional): nothing to judge");
  }),

  check("WS-3 execution_cached names nodes that then do not run; new inputs are never cached, an identical rerun runs or caches each node", H, async (t: T) => {
    const s = await socket(t);
    // The same graph twice: its first run has inputs no run had (a nonce), its rerun the first's.
    const graph: Graph = simpleGraph();
    const first = await queuePromptOk(t, graph);
    await untilEnd(t, s, first);
    const rerun = await queuePromptOk(t, graph);
    await untilEnd(t, s, rerun);
    for (const [id, label] of [
      [first, "the first run"],
      [rerun, "the identical rerun"],
    ] as const) {
      const ms = s.jobMessages(id);
      const lists = ms.filter((m) => m.type === "execution_cached");
      t.need(lists.length > 0, `${label} (prompt ${id}) sent no execution_cached (reported under WS-3's message list): nothing to judge`);
      t.expect(lists.length === 1, `${label} sent ${lists.length} execution_cached messages; the spec says once`);
      const cached = new Set((lists[0]!.data.nodes as unknown[]).map(String));
      const ran = new Set(
        ms
          .filter((m) => (m.type === "executing" || m.type === "progress") && typeof m.data.node === "string" && m.data.node !== "")
          .map((m) => String(m.data.node)),
      );
      for (const node of cached) t.expect(!ran.has(node), `${label}: node ${node} was listed in execution_cached, then ran (executing or progress names it)`);
      for (const node of Object.keys(graph))
        t.expect(cached.has(node) || ran.has(node), `${label}: node ${node} neither ran nor was listed in execution_cached`);
      if (id === first)
        t.expect(
          cached.size === 0,
          `the first run of inputs no run had before listed nodes ${[...cached].join(", ")} as cached: a cached result of other inputs`,
        );
    }
  }),

  check("WS-3 an interrupted run ends with execution_interrupted, then the empty executing", H, async (t: T) => {
    const s = await socket(t);
    const id = await queuePromptOk(t, endedEarlyGraph(t));
    await whenStarted(t, id);
    await t.http.request("POST", t.http.url("/api/interrupt"), { json: { prompt_id: id } });
    const ms = await untilEnd(t, s, id);
    const end = ms.find((m) => ENDINGS.has(m.type))!;
    t.expect(end.type === "execution_interrupted", `an interrupted run ended with ${end.type}`);
  }),

  check("WS-5 a line a node prints arrives whole in a TEXT frame (type 3) with a node id", H, async (t: T) => {
    const marker = `conformance-${nonce()}`;
    const graph = printGraph(marker);
    t.requireClasses(graph, "print");
    const s = await socket(t);
    const id = await queuePromptOk(t, graph);
    await untilEnd(t, s, id);
    const texts = s.messages.filter((m) => m.kind === "binary" && m.frameType === 3);
    t.need(texts.length > 0, "the run sent no TEXT frame for the lines its nodes printed (sending them is optional): nothing to judge");
    // Which node a printed line is attributed to is not pinned: a ComfyUI-backed surface reads the
    // captured output after the fact (see conformance/README.md, field meanings).
    for (const line of [marker, `${marker} second`]) {
      const frame = texts.find((m) => m.kind === "binary" && m.text?.trim() === line);
      t.expect(!!frame, `no TEXT frame carried the printed line "${line}" whole (got ${JSON.stringify(texts.map((m) => m.kind === "binary" && m.text))})`);
    }
  }),

  check("WS-6 executed file infos are {filename, subfolder, type} and /api/view serves them", H, async (t: T) => {
    const s = await socket(t);
    const id = await queuePromptOk(t, simpleGraph());
    const ms = await untilEnd(t, s, id);
    const infos = ms
      .filter((m) => m.type === "executed")
      .flatMap((m) => ((m.data.output as { images?: unknown[] })?.images ?? []) as Array<Record<string, unknown>>);
    t.need(
      infos.length > 0,
      `the simple prompt's messages carried no file info in an executed message (got ${ms.map((m) => m.type).join(", ")}; reported under WS-3)`,
    );
    for (const info of infos) {
      t.expect(
        typeof info.filename === "string" && typeof info.subfolder === "string" && ["output", "temp", "input"].includes(String(info.type)),
        `file info ${JSON.stringify(info)}`,
      );
      const { redirect, file } = await view(t, info as { filename: string; subfolder: string; type: string });
      t.expect(
        file?.status === 200 && file.bytes.byteLength > 0,
        `/api/view of ${info.filename} answered ${redirect.status}${file ? ` then ${file.status}` : ""}`,
        file ?? redirect,
      );
    }
  }),
];

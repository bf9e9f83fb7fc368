// The double's hosted WebSocket at /ws: ComfyUI's JSON messages and binary previews (type 1, or
// type 4 after a feature_flags first message), to every connection of the job's account.
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { JobRec, State } from "./state.ts";

interface Conn {
  ws: WebSocket;
  account: string;
  metadata: boolean;
}

/** Wires the WebSocket side to a state; returns the upgrade handler. */
export function attachWs(s: State): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  const wss = new WebSocketServer({ noServer: true });
  const conns = new Set<Conn>();
  const now = () => Date.now();
  const to = (account: string, msg: unknown) => {
    for (const c of conns) if (c.account === account) c.ws.send(JSON.stringify(msg));
  };
  const remaining = (account: string) =>
    [...s.jobs.values()].filter((j) => j.account === account && ["queued", "running", "canceling"].includes(j.status)).length;
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    if (s.broken("wsLittleEndian")) b.writeUInt32LE(n);
    else b.writeUInt32BE(n);
    return b;
  };

  s.bus.on("queue", (account: string) => to(account, { type: "status", data: { status: { exec_info: { queue_remaining: remaining(account) } } } }));
  s.bus.on("wsExecuting", (job: JobRec, node: string) => to(job.account, { type: "executing", data: { node, display_node: node, prompt_id: job.id } }));
  s.bus.on("wsProgress", (job: JobRec, node: string, value: number, max: number) =>
    to(job.account, { type: "progress", data: { value, max, prompt_id: job.id, node } }),
  );
  s.bus.on("wsExecuted", (job: JobRec, node: string) =>
    to(job.account, { type: "executed", data: { node, display_node: node, output: job.hostedOutputs[node], prompt_id: job.id } }),
  );
  s.bus.on("wsPreview", (job: JobRec, node: string, jpeg: Uint8Array) => {
    for (const c of conns) {
      if (c.account !== job.account) continue;
      if (c.metadata) {
        // previewNamesOtherNode: the graph's first node other than the one running.
        const named = s.broken("previewNamesOtherNode") ? (Object.keys(job.workflow).find((n) => n !== node) ?? node) : node;
        const imageType = s.broken("previewDeclaredPng") ? "image/png" : "image/jpeg";
        const meta = Buffer.from(
          JSON.stringify({ node_id: named, display_node_id: named, real_node_id: named, prompt_id: job.id, parent_node_id: null, image_type: imageType }),
        );
        c.ws.send(Buffer.concat([u32(4), u32(meta.byteLength), meta, Buffer.from(jpeg)]));
      } else c.ws.send(Buffer.concat([u32(1), u32(1), Buffer.from(jpeg)]));
    }
  });
  s.bus.on("wsText", (job: JobRec, node: string, text: string) => {
    const id = Buffer.from(node);
    const body = Buffer.from(s.broken("textFrameTruncated") ? text.slice(1) : text);
    for (const c of conns) if (c.account === job.account) c.ws.send(Buffer.concat([u32(3), u32(id.byteLength), id, body]));
  });
  s.bus.on("job", (job: JobRec, status: string) => {
    const id = job.id;
    if (status === "running") {
      to(job.account, { type: "execution_start", data: { prompt_id: id, timestamp: now() } });
      const cached = s.broken("cachedNodesRun") ? Object.keys(job.workflow) : [];
      to(job.account, { type: "execution_cached", data: { nodes: cached, prompt_id: id, timestamp: now() } });
      return;
    }
    if (!job.startedAt) return; // canceled while queued: no execution messages
    if (status === "succeeded" || (status === "failed" && s.broken("wsSuccessForFailed")))
      to(job.account, { type: "execution_success", data: { prompt_id: id, timestamp: now() } });
    else if (status === "failed") {
      to(job.account, {
        type: "execution_error",
        data: {
          prompt_id: id,
          node_id: job.error?.node_id ?? null,
          node_type: job.error?.class_type ?? null,
          executed: [],
          exception_type: "ValidationError",
          exception_message: job.error?.message ?? "",
          traceback: [],
          current_inputs: {},
          current_outputs: [],
          timestamp: now(),
        },
      });
    } else if (status === "canceled")
      to(job.account, { type: "execution_interrupted", data: { prompt_id: id, node_id: null, node_type: null, executed: [], timestamp: now() } });
    else return;
    to(job.account, { type: "executing", data: { node: null, prompt_id: id } });
  });

  return (req, socket, head) => {
    const url = new URL(req.url ?? "/", "http://double");
    const auth = s.account(url.searchParams.get("token") ?? undefined);
    if (url.pathname !== "/ws" || !s.o.hosted || !("account" in auth)) {
      const status =
        url.pathname !== "/ws" || !s.o.hosted ? "404 Not Found" : auth && "status" in auth && auth.status === 403 ? "403 Forbidden" : "401 Unauthorized";
      socket.end(`HTTP/1.1 ${status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn: Conn = { ws, account: auth.account, metadata: false };
      conns.add(conn);
      let first = true;
      ws.on("message", (data, isBinary) => {
        if (first && !isBinary) {
          try {
            const m = JSON.parse(String(data)) as { type?: string; data?: { supports_preview_metadata?: boolean } };
            if (m.type === "feature_flags") conn.metadata = m.data?.supports_preview_metadata === true;
          } catch {
            // anything else a client sends is ignored
          }
        }
        first = false;
      });
      ws.on("close", () => conns.delete(conn));
      ws.send(
        JSON.stringify({
          type: "status",
          data: { status: { exec_info: { queue_remaining: remaining(auth.account) } }, sid: crypto.randomUUID().replaceAll("-", "") },
        }),
      );
    });
  };
}

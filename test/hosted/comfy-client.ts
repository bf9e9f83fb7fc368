// A minimal client written only against ComfyUI's documented API and message order, to prove
// the hosted interface is a drop-in: upload, queue, follow the WebSocket, history, download.
import WebSocket from "ws";

export interface ComfyMessage {
  type: string;
  data: Record<string, unknown>;
}

export class ComfyClient {
  readonly base: string;
  readonly key: string | undefined;
  readonly clientId = crypto.randomUUID();
  messages: ComfyMessage[] = [];
  binary: Buffer[] = [];
  private ws: WebSocket | null = null;

  constructor(base: string, key?: string) {
    this.base = base;
    this.key = key;
  }

  private headers(): Record<string, string> {
    return this.key ? { "X-API-Key": this.key } : {};
  }

  /** Opens /ws and sends ComfyUI's feature_flags handshake when asked. */
  async connect(previewMetadata = false): Promise<void> {
    const url = `${this.base.replace(/^http/, "ws")}/ws?clientId=${this.clientId}${this.key ? `&token=${encodeURIComponent(this.key)}` : ""}`;
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.on("message", (data, isBinary) => {
      if (isBinary) this.binary.push(data as Buffer);
      else this.messages.push(JSON.parse(String(data)) as ComfyMessage);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    if (previewMetadata) ws.send(JSON.stringify({ type: "feature_flags", data: { supports_preview_metadata: true } }));
  }

  close(): void {
    this.ws?.close();
  }

  /** POST /api/upload/image, without setting Content-Type (the client sets the boundary). */
  async uploadImage(bytes: Uint8Array, filename: string): Promise<{ name: string; subfolder: string }> {
    const form = new FormData();
    form.append("image", new Blob([new Uint8Array(bytes)]), filename);
    form.append("type", "input");
    form.append("overwrite", "true");
    const res = await fetch(`${this.base}/api/upload/image`, { method: "POST", headers: this.headers(), body: form });
    if (res.status !== 200) throw new Error(`upload: ${res.status} ${await res.text()}`);
    return (await res.json()) as { name: string; subfolder: string };
  }

  /** POST /api/prompt. */
  async queuePrompt(prompt: Record<string, unknown>, extra?: Record<string, unknown>): Promise<Response> {
    return fetch(`${this.base}/api/prompt`, {
      method: "POST",
      headers: { ...this.headers(), "Content-Type": "application/json" },
      body: JSON.stringify({ prompt, client_id: this.clientId, ...(extra ? { extra_data: extra } : {}) }),
    });
  }

  /** Waits for `executing` with a null node for this prompt: ComfyUI's end of execution. */
  async waitForEnd(promptId: string, ms = 20_000): Promise<ComfyMessage[]> {
    const deadline = Date.now() + ms;
    for (;;) {
      const mine = this.messages.filter((m) => m.data?.prompt_id === promptId);
      const end = mine.find((m) => (m.type === "executing" && !m.data.node) || m.type === "execution_error" || m.type === "execution_interrupted");
      if (end) return mine;
      if (Date.now() > deadline) throw new Error(`no end for ${promptId}: ${mine.map((m) => m.type).join(",")}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async history(promptId: string): Promise<Record<string, any>> {
    const res = await fetch(`${this.base}/api/history/${promptId}`, { headers: this.headers() });
    return (await res.json()) as Record<string, any>;
  }

  /** GET /api/view with the key, then the redirect target without it, as the seed requires. */
  async view(file: {
    filename: string;
    subfolder: string;
    type: string;
  }): Promise<{ status: number; target: string; bytes: Buffer; contentType: string | null }> {
    const q = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: file.type });
    const res = await fetch(`${this.base}/api/view?${q}`, { headers: this.headers(), redirect: "manual" });
    const target = res.headers.get("location") ?? "";
    if (res.status !== 302) return { status: res.status, target, bytes: Buffer.alloc(0), contentType: null };
    const file2 = await fetch(new URL(target, this.base));
    return { status: file2.status, target, bytes: Buffer.from(await file2.arrayBuffer()), contentType: file2.headers.get("content-type") };
  }
}

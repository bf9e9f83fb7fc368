// The hosted calls the queue tests make with one API key: requests, prompts that end at once or
// hold a slot for a while, and a prompt's status.
import { expect } from "vitest";
import type { TestServer } from "./hosted-server.ts";

/** The calls, on the server `server()` returns when they run (a test file starts it in beforeAll). */
export function queueCalls(server: () => TestServer, key: string) {
  /** A GET, or a POST of `body` as JSON, under /api. */
  const api = (path: string, body?: unknown): Promise<Response> => {
    const init: RequestInit = { headers: { "X-API-Key": key, "content-type": "application/json" } };
    if (body !== undefined) Object.assign(init, { method: "POST", body: JSON.stringify(body) });
    return fetch(`${server().url}/api${path}`, init);
  };
  /** Queues a prompt that previews `value`, after `seconds` (cancellable) when given; its id. */
  const queuePrompt = async (value: string, seconds = 0): Promise<string> => {
    const prompt =
      seconds > 0
        ? {
            "1": { class_type: "PrimitiveString", inputs: { value } },
            "2": { class_type: "FlowgateDelay", inputs: { value: ["1", 0], seconds } },
            "3": { class_type: "PreviewAny", inputs: { source: ["2", 0] } },
          }
        : { "1": { class_type: "PrimitiveString", inputs: { value } }, "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } } };
    const res = await api("/prompt", { prompt });
    expect(res.status).toBe(200);
    return ((await res.json()) as { prompt_id: string }).prompt_id;
  };
  /** A prompt's status as GET /api/job/{id}/status tells it. */
  const status = async (id: string): Promise<string> => ((await (await api(`/job/${id}/status`)).json()) as { status: string }).status;
  /** queue_remaining as GET /api/prompt tells it. */
  const remaining = async (): Promise<number> =>
    ((await (await api("/prompt")).json()) as { exec_info: { queue_remaining: number } }).exec_info.queue_remaining;
  return { api, queuePrompt, status, remaining };
}

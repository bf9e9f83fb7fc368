// FlowgatePartnerCall: a partner node. POSTs {prompt} to the configured vendor URL with the
// caller's key as a bearer token. The key is never stored, logged, or put in a message.
import { ExecutionCancelledError, PartnerNodeError } from "../errors.ts";
import { stringInput, type NodeDefinition } from "../node-spec.ts";
import { stringValue } from "./helpers.ts";

/** Reads the vendor's answer: {"text": "..."} JSON, or else the body as text. */
async function answerText(res: Response): Promise<string> {
  const body = await res.text();
  if ((res.headers.get("content-type") ?? "").includes("json")) {
    try {
      const parsed = JSON.parse(body) as unknown;
      if (typeof parsed === "object" && parsed !== null && typeof (parsed as { text?: unknown }).text === "string") {
        return (parsed as { text: string }).text;
      }
    } catch {
      // Not JSON after all: return the text as is.
    }
  }
  return body;
}

/** FlowgatePartnerCall: sends the prompt to the vendor and returns the text it answers. */
export const FlowgatePartnerCall: NodeDefinition = {
  name: "FlowgatePartnerCall",
  display_name: "Partner Call (flowgate)",
  category: "api node/flowgate",
  description: "Calls the configured partner endpoint with the caller's API key (extra_data.api_key_vendor_org).",
  python_module: "custom_nodes.flowgate",
  input: {
    required: { prompt: stringInput({ multiline: true, default: "" }) },
    hidden: { api_key_vendor_org: "API_KEY_VENDOR_ORG", unique_id: "UNIQUE_ID" },
  },
  output: ["STRING"],
  output_name: ["text"],
  output_node: false,
  api_node: true,
  cacheable: false,
  async run(ctx, inputs) {
    const partner = ctx.partner;
    if (!partner?.url) throw new PartnerNodeError("No partner endpoint is configured on this server");
    if (!partner.apiKey) throw new PartnerNodeError("This node needs an API key: pass extra_data.api_key_vendor_org");
    const prompt = stringValue(inputs, "prompt");
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(partner.timeoutMs)]);
    let res: Response;
    try {
      res = await partner.fetch(partner.url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${partner.apiKey}` },
        body: JSON.stringify({ prompt }),
        signal,
      });
    } catch (err) {
      if (ctx.signal.aborted) throw new ExecutionCancelledError(ctx.node_id);
      const timedOut = err instanceof Error && err.name === "TimeoutError";
      // The cause may echo request details; only a fixed sentence leaves this node.
      throw new PartnerNodeError(timedOut ? "The partner service did not answer in time" : "The partner service could not be reached");
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw new PartnerNodeError(`The partner service rejected the API key (HTTP ${res.status})`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new PartnerNodeError(`The partner service failed (HTTP ${res.status})`);
    }
    return { result: [await answerText(res)] };
  },
};

/** The partner family. */
export const partnerNodes: readonly NodeDefinition[] = [FlowgatePartnerCall];

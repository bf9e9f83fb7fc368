import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError, ExecutionCancelledError } from "../../src/engine/index.ts";
import { newEngine, node, recorder } from "./helpers.ts";

const KEY = "sk-vendor-test-0123456789abcdef";

interface Seen {
  authorization: string | undefined;
  contentType: string | undefined;
  body: unknown;
}

let server: Server;
let url: string;
const seen: Seen[] = [];
let hang: (() => void) | null = null;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => resolve(data));
  });
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = await readBody(req);
    seen.push({ authorization: req.headers.authorization, contentType: req.headers["content-type"], body: JSON.parse(body || "null") });
    if (req.url === "/hang") {
      hang = () => res.destroy();
      return;
    }
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: `bad key ${req.headers.authorization}` }));
      return;
    }
    if (req.url === "/forbidden") {
      res.writeHead(403).end();
      return;
    }
    const prompt = (JSON.parse(body) as { prompt: string }).prompt;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ text: `echo: ${prompt}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  hang?.();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const graph = (prompt = "hello") => ({
  "1": node("FlowgatePartnerCall", { prompt }),
  "2": node("PreviewAny", { source: ["1", 0] }),
});

/** Everything an error exposes as text. */
const exposed = (err: EngineError) => JSON.stringify(err.jobError) + err.message + String(err.stack);

describe("FlowgatePartnerCall", () => {
  it("posts {prompt} with the caller's key as a bearer token and returns the answer", async () => {
    seen.length = 0;
    const engine = newEngine({ partnerUrl: `${url}/v1` });
    const { rec, options } = recorder({ extra: { api_key_vendor_org: KEY } });
    const result = await engine.execute(graph(), options);
    expect(seen).toEqual([{ authorization: `Bearer ${KEY}`, contentType: "application/json", body: { prompt: "hello" } }]);
    expect(result.ui["2"]).toEqual({ text: ["echo: hello"] });
    expect(rec.logs.join("")).not.toContain(KEY);
  });

  it("is never cached: the same call made twice reaches the vendor twice", async () => {
    seen.length = 0;
    const engine = newEngine({ partnerUrl: `${url}/v1` });
    await engine.execute(graph("again"), { extra: { api_key_vendor_org: KEY } });
    const { rec, options } = recorder({ extra: { api_key_vendor_org: KEY } });
    await engine.execute(graph("again"), options);
    expect(seen).toHaveLength(2);
    expect(rec.started).toEqual(["1", "2"]);
    // Neither the answer nor anything derived from it is kept.
    expect(engine.cacheStats().entries).toBe(0);
  });

  it("fails with partner_node_error without a key, and never calls the vendor", async () => {
    seen.length = 0;
    const err = (await newEngine({ partnerUrl: `${url}/v1` })
      .execute(graph())
      .catch((e: unknown) => e)) as EngineError;
    expect(err).toBeInstanceOf(EngineError);
    expect(err.jobError).toMatchObject({ code: "partner_node_error", node_id: "1", class_type: "FlowgatePartnerCall" });
    expect(seen).toHaveLength(0);
  });

  it("fails with partner_node_error on 401 and 403, and the key appears nowhere", async () => {
    for (const [path, key, status] of [
      ["/v1", `${KEY}-wrong`, 401],
      ["/forbidden", KEY, 403],
    ] as const) {
      const err = (await newEngine({ partnerUrl: `${url}${path}` })
        .execute(graph(), { extra: { api_key_vendor_org: key } })
        .catch((e: unknown) => e)) as EngineError;
      expect(err.jobError.code).toBe("partner_node_error");
      expect(err.jobError.message).toContain(String(status));
      expect(exposed(err)).not.toContain(key);
      expect(exposed(err)).not.toContain(KEY);
    }
  });

  it("fails with partner_node_error when no vendor URL is configured", async () => {
    const err = (await newEngine()
      .execute(graph(), { extra: { api_key_vendor_org: KEY } })
      .catch((e: unknown) => e)) as EngineError;
    expect(err.jobError.code).toBe("partner_node_error");
  });

  it("is cancelled while waiting on the vendor", async () => {
    const controller = new AbortController();
    const run = newEngine({ partnerUrl: `${url}/hang` }).execute(graph(), {
      extra: { api_key_vendor_org: KEY },
      signal: controller.signal,
      onNodeStart: (e) => {
        if (e.node_id === "1") controller.abort();
      },
    });
    await expect(run).rejects.toBeInstanceOf(ExecutionCancelledError);
  });

  it("never hands the key to nodes other than partner nodes", async () => {
    let partnerSeen: unknown = "unset";
    const spy = {
      name: "Spy",
      display_name: "Spy",
      category: "test",
      description: "",
      python_module: "test",
      input: { required: {} },
      output: [],
      output_node: true,
      run: (ctx: { partner: unknown }) => {
        partnerSeen = ctx.partner;
        return {};
      },
    };
    await newEngine({ extraNodes: [spy] }).execute({ "1": node("Spy") }, { extra: { api_key_vendor_org: KEY } });
    expect(partnerSeen).toBeNull();
  });
});

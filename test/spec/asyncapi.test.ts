// Checks the event contract (spec/asyncapi.yaml) and its generator module: the document is valid,
// every message is covered by a schema and an example that passes it, the seed's catalog of SSE
// events, WebSocket types and binary frames is all there, and the generated types are stable and
// compile.
import { mkdtemp, readFile, rm, writeFile, copyFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { AnySchema, ValidateFunction } from "ajv/dist/2020.js";
import ajvFormats from "ajv-formats";
import type { FormatsPlugin } from "ajv-formats";
import ts from "typescript";
import { parse as parseYaml } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { OPENAPI_SCHEMA_ID, asyncapiMessageSchemas, generateAsyncApiTypes, validateAsyncApi } from "../../generators/asyncapi.ts";

// ajv-formats is CommonJS and its types declare an ESM default: under NodeNext the default import
// is the module object, whose .default is the plugin (at run time either shape may show up).
const formatsModule = ajvFormats as unknown as FormatsPlugin & { default?: FormatsPlugin };
const addFormats: FormatsPlugin = formatsModule.default ?? formatsModule;

type Obj = Record<string, unknown>;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const ASYNCAPI = path.join(ROOT, "spec", "asyncapi.yaml");
const OPENAPI = path.join(ROOT, "spec", "openapi.yaml");

const SEED_WS_TYPES = [
  "status",
  "notification",
  "execution_start",
  "executing",
  "progress",
  "progress_state",
  "executed",
  "execution_cached",
  "execution_success",
  "execution_error",
  "execution_interrupted",
];
const DECISION_SSE_EVENTS = ["status", "progress", "preview", "output", "log"];
const SEED_EXCEPTION_TYPES = ["ValidationError", "ModelDownloadError", "ImageDownloadError", "OOMError", "InsufficientFundsError", "InactiveSubscriptionError"];

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const asObj = (v: unknown, what: string): Obj => {
  if (!isObj(v)) throw new Error(`${what} is not an object`);
  return v;
};

let doc: Obj;
let openapi: Obj;
let schemas: Record<string, object>;

function localRef(ref: unknown): Obj {
  if (typeof ref !== "string" || !ref.startsWith("#/")) throw new Error(`not a local ref: ${String(ref)}`);
  let cur: unknown = doc;
  for (const part of ref.slice(2).split("/")) cur = asObj(cur, ref)[part];
  return asObj(cur, ref);
}
const deref = (node: unknown): Obj => (isObj(node) && typeof node["$ref"] === "string" ? deref(localRef(node["$ref"])) : asObj(node, "node"));

function channelMessages(channel: string): Record<string, Obj> {
  const msgs = asObj(asObj(asObj(doc["channels"], "channels")[channel], channel)["messages"], `${channel}.messages`);
  return Object.fromEntries(Object.entries(msgs).map(([k, v]) => [k, deref(v)]));
}

/** Schema key of a message, worked out from the document's layout independently of the generator. */
function expectedKeys(): Map<string, Obj> {
  const out = new Map<string, Obj>();
  for (const m of Object.values(channelMessages("jobEvents"))) out.set(`sse.${String(m["name"])}`, m);
  const sendOp = asObj(asObj(doc["operations"], "operations")["sendFeatureFlags"], "sendFeatureFlags");
  const clientMsgs = new Set((sendOp["messages"] as unknown[]).map((r) => deref(r)));
  for (const m of Object.values(channelMessages("hostedSocket"))) {
    if (m["contentType"] === "application/octet-stream") continue;
    out.set(`${clientMsgs.has(m) ? "ws.client" : "ws"}.${String(m["name"])}`, m);
  }
  return out;
}

function collectKeys(node: unknown, found: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const n of node) collectKeys(n, found);
  else if (isObj(node)) {
    for (const [k, v] of Object.entries(node)) {
      if (k.startsWith("x-")) found.add(k);
      collectKeys(v, found);
    }
  }
  return found;
}

// strictTypes/strictRequired findings ajv logs instead of throwing (see makeAjv); each names the schema it is in.
const strictTypeFindings: string[] = [];

/** ajv as the lead will use it: 2020-12, strict, formats, OpenAPI/AsyncAPI keywords as vocabulary. */
function makeAjv(): Ajv2020 {
  // strictTypes and strictRequired only log, so that a finding inside openapi.yaml (not ours to fix here) does not
  // stop the example checks; findings inside our own schemas are asserted empty below.
  const ajv = new Ajv2020({
    strict: true,
    strictTypes: "log",
    strictRequired: "log",
    allErrors: true,
    allowUnionTypes: true,
    logger: { log: () => undefined, warn: (...args: unknown[]) => void strictTypeFindings.push(args.map(String).join(" ")), error: console.error },
  });
  addFormats(ajv);
  const extensions = [...collectKeys(openapi["components"], new Set())];
  // "components" too: resolving a ref into the registered document compiles its root.
  ajv.addVocabulary(["components", "example", "xml", "externalDocs", "discriminator", ...extensions]);
  ajv.addSchema({ $id: OPENAPI_SCHEMA_ID, components: { schemas: asObj(openapi["components"], "components")["schemas"] } } as AnySchema);
  return ajv;
}

const compiled = new Map<string, ValidateFunction>();
function validatorFor(ajv: Ajv2020, key: string): ValidateFunction {
  let v = compiled.get(key);
  if (v === undefined) {
    const schema = schemas[key];
    if (schema === undefined) throw new Error(`no schema for ${key}`);
    v = ajv.compile(schema);
    compiled.set(key, v);
  }
  return v;
}

beforeAll(async () => {
  doc = asObj(parseYaml(await readFile(ASYNCAPI, "utf8")), "asyncapi.yaml");
  openapi = asObj(parseYaml(await readFile(OPENAPI, "utf8")), "openapi.yaml");
  schemas = await asyncapiMessageSchemas();
});

describe("spec/asyncapi.yaml validity", () => {
  it("parses with @asyncapi/parser, refs into openapi.yaml resolved, with no error diagnostics", async () => {
    const { errors } = await validateAsyncApi();
    expect(errors).toEqual([]);
  });

  it("is AsyncAPI 3.0.0 with the version of openapi.yaml (one contract: /docs and /docs/events say the same)", async () => {
    expect(doc["asyncapi"]).toBe("3.0.0");
    const openapi = parseYaml(await readFile(OPENAPI, "utf8")) as { info: { version: string } };
    expect(asObj(doc["info"], "info")["version"]).toBe(openapi.info.version);
  });

  it("validateAsyncApi reports errors for a broken document (the check can fail)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "flowgate-asyncapi-"));
    try {
      await copyFile(OPENAPI, path.join(dir, "openapi.yaml"));
      const broken = (await readFile(ASYNCAPI, "utf8")).replace("action: receive", "action: listen");
      await writeFile(path.join(dir, "asyncapi.yaml"), broken);
      expect((await validateAsyncApi(path.join(dir, "asyncapi.yaml"))).errors.length).toBeGreaterThan(0);
      const missing = await validateAsyncApi(path.join(dir, "nope.yaml"));
      expect(missing.errors.length).toBeGreaterThan(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("shares schemas with openapi.yaml by $ref only, and every target exists there", () => {
    const text = JSON.stringify(doc);
    const refs = [...text.matchAll(/"\$ref":"(\.\/openapi\.yaml#[^"]*)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    const names = Object.keys(asObj(asObj(openapi["components"], "components")["schemas"], "schemas"));
    for (const ref of refs) {
      const name = /^\.\/openapi\.yaml#\/components\/schemas\/(\w+)$/.exec(ref)?.[1];
      expect(name, ref).toBeDefined();
      expect(names, ref).toContain(name);
    }
    // Shared schemas are never redefined locally.
    const local = Object.keys(asObj(asObj(doc["components"], "components")["schemas"], "schemas"));
    for (const shared of ["Job", "JobWithoutLogs", "Progress", "Output", "HostedFileInfo", "HostedNodeOutputs"]) {
      expect(local).not.toContain(shared);
    }
  });

  it("gives every property of every local schema a description (or a $ref to a described schema)", () => {
    const missing: string[] = [];
    const visit = (node: unknown, where: string): void => {
      if (!isObj(node)) return;
      const props = isObj(node["properties"]) ? node["properties"] : {};
      for (const [name, prop] of Object.entries(props)) {
        const p = asObj(prop, `${where}.${name}`);
        const described = typeof p["description"] === "string" && p["description"].length > 0;
        const ref = p["$ref"];
        const refDescribed = typeof ref === "string" && (ref.startsWith("./openapi.yaml#") || typeof localRef(ref)["description"] === "string");
        if (!described && !refDescribed) missing.push(`${where}.${name}`);
        visit(p, `${where}.${name}`);
      }
      for (const k of ["items", "additionalProperties"]) visit(node[k], `${where}.${k}`);
    };
    for (const [name, s] of Object.entries(asObj(asObj(doc["components"], "components")["schemas"], "schemas"))) {
      expect(typeof asObj(s, name)["description"], `${name} has a description`).toBe("string");
      visit(s, name);
    }
    expect(missing).toEqual([]);
  });
});

describe("message catalog", () => {
  it("has every SSE event named in DECISIONS on the jobEvents channel", () => {
    const ch = asObj(asObj(doc["channels"], "channels")["jobEvents"], "jobEvents");
    expect(ch["address"]).toBe("/api/v2/jobs/{id}/events");
    const names = Object.values(channelMessages("jobEvents")).map((m) => m["name"]);
    expect([...names].sort()).toEqual([...DECISION_SSE_EVENTS].sort());
  });

  it("carries the job without logs, Progress and Output from openapi.yaml in status, progress and output", () => {
    const m = channelMessages("jobEvents");
    expect(m["status"]?.["payload"]).toEqual({ $ref: "./openapi.yaml#/components/schemas/JobWithoutLogs" });
    expect(m["progress"]?.["payload"]).toEqual({ $ref: "./openapi.yaml#/components/schemas/Progress" });
    expect(m["output"]?.["payload"]).toEqual({ $ref: "./openapi.yaml#/components/schemas/Output" });
  });

  it("models the SSE stream as a receive operation with an http GET binding", () => {
    const op = asObj(asObj(doc["operations"], "operations")["receiveJobEvents"], "receiveJobEvents");
    expect(op["action"]).toBe("receive");
    expect(asObj(asObj(op["bindings"], "bindings")["http"], "http")["method"]).toBe("GET");
    expect((op["messages"] as unknown[]).length).toBe(DECISION_SSE_EVENTS.length);
  });

  it("states the stream rules: no id lines, Last-Event-ID ignored, keep-alive, throttling, too_many_streams", () => {
    const text = String(asObj(asObj(doc["channels"], "channels")["jobEvents"], "jobEvents")["description"]);
    for (const phrase of [
      "`id:`",
      "Last-Event-ID",
      "`: keep-alive`",
      "15 seconds",
      "four a second",
      "too_many_streams",
      "Retry-After",
      "source of truth",
      "closes the stream",
    ]) {
      expect(text, phrase).toContain(phrase);
    }
  });

  it("has every WebSocket message type of the seed, each a {type, data} frame with the type as const", () => {
    const keys = expectedKeys();
    for (const type of SEED_WS_TYPES) {
      const msg = keys.get(`ws.${type}`);
      expect(msg, type).toBeDefined();
      const payload = deref(msg!["payload"]);
      expect(payload["required"]).toEqual(["type", "data"]);
      expect(asObj(asObj(payload["properties"], "properties")["type"], "type")["const"]).toBe(type);
    }
  });

  it("identifies the job by data.prompt_id on every WebSocket message that concerns one job", () => {
    for (const type of SEED_WS_TYPES.filter((t) => t !== "status" && t !== "notification")) {
      const data = asObj(asObj(asObj(schemas[`ws.${type}`], type)["properties"], "properties")["data"], "data");
      const target = asObj(asObj(asObj(schemas[`ws.${type}`], type)["$defs"], "$defs")[String(data["$ref"]).replace("#/$defs/", "")], "data");
      expect(target["required"], type).toContain("prompt_id");
    }
  });

  it("keeps ComfyUI's status shape {status: {exec_info: {queue_remaining}}, sid?}", () => {
    const v = validatorFor(makeAjv(), "ws.status");
    expect(v({ type: "status", data: { status: { exec_info: { queue_remaining: 3 } } } })).toBe(true);
    expect(v({ type: "status", data: { queue_remaining: 3 } })).toBe(false);
  });

  it("allows node null (the end marker) in executing", () => {
    const v = validatorFor(makeAjv(), "ws.executing");
    expect(v({ type: "executing", data: { node: null, prompt_id: "p" } })).toBe(true);
    expect(v({ type: "executing", data: { node: 7, prompt_id: "p" } })).toBe(false);
  });

  it("restricts execution_error.exception_type to the six seed values", () => {
    const s = asObj(schemas["ws.execution_error"], "ws.execution_error");
    const enumValues = asObj(asObj(s["$defs"], "$defs")["HostedExceptionType"], "HostedExceptionType")["enum"];
    expect(enumValues).toEqual(SEED_EXCEPTION_TYPES);
    const v = validatorFor(makeAjv(), "ws.execution_error");
    const example = structuredClone(expectedKeys().get("ws.execution_error")!["examples"] as Obj[])[0]!["payload"] as Obj;
    expect(v(example)).toBe(true);
    asObj(example["data"], "data")["exception_type"] = "RuntimeError";
    expect(v(example)).toBe(false);
  });

  it("documents the client feature_flags message that opts into binary type 4", () => {
    const msg = expectedKeys().get("ws.client.feature_flags");
    expect(msg).toBeDefined();
    const v = validatorFor(makeAjv(), "ws.client.feature_flags");
    expect(v({ type: "feature_flags", data: { supports_preview_metadata: true } })).toBe(true);
    expect(v({ type: "feature_flags", data: { supports_preview_metadata: "yes" } })).toBe(false);
  });

  it("uses the v2 bearer scheme for SSE and the token query parameter for the WebSocket", () => {
    const servers = asObj(doc["servers"], "servers");
    const schemeOf = (server: string): Obj[] => (asObj(servers[server], server)["security"] as unknown[]).map((s) => deref(s));
    expect(schemeOf("v2")).toContainEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
    expect(schemeOf("hosted")).toContainEqual(expect.objectContaining({ type: "httpApiKey", in: "query", name: "token" }));
    expect(asObj(servers["v2"], "v2")["protocol"]).toBe("http");
    expect(asObj(servers["hosted"], "hosted")["protocol"]).toBe("ws");
    for (const s of ["v2", "v2Gateway", "hosted"]) expect(asObj(servers[s], s)["x-flowgate-anonymous"], s).toBe(true);
  });
});

describe("binary frames", () => {
  const SEED_LAYOUTS: Record<number, string[]> = {
    1: ["type", "image_type", "image"],
    3: ["type", "node_id_len", "node_id", "text"],
    4: ["type", "metadata_len", "metadata", "image"],
  };

  it("documents types 1, 3 and 4 as octet-stream messages with their byte layout", () => {
    const binary = Object.values(channelMessages("hostedSocket")).filter((m) => m["contentType"] === "application/octet-stream");
    expect(binary.map((m) => m["x-flowgate-binary-type"]).sort()).toEqual([1, 3, 4]);
    for (const m of binary) {
      const type = m["x-flowgate-binary-type"] as number;
      const layout = (m["x-flowgate-frame-layout"] as Obj[]).map((f) => f["field"]);
      expect(layout, `type ${type}`).toEqual(SEED_LAYOUTS[type]);
      const text = String(m["description"]);
      expect(text).toContain("big-endian");
      expect(text).toContain(`| 0-3 | frame type, \`${type}\` |`);
      expect(text).toContain("| 4-7 |");
    }
  });

  it("gives image types 1 JPEG and 2 PNG for PREVIEW_IMAGE", () => {
    const s = deref({ $ref: "#/components/schemas/PreviewImageType" });
    expect(s["enum"]).toEqual([1, 2]);
    expect(s["x-enum-varnames"]).toEqual(["JPEG", "PNG"]);
  });

  it("has the type-4 metadata JSON as its own schema with parent_node_id nullable", () => {
    const s = asObj(schemas["ws.binary.preview_metadata"], "ws.binary.preview_metadata");
    expect(s["required"]).toEqual(expect.arrayContaining(["node_id", "display_node_id", "real_node_id", "prompt_id", "parent_node_id"]));
    const v = validatorFor(makeAjv(), "ws.binary.preview_metadata");
    const base = { node_id: "2", display_node_id: "2", real_node_id: "2", prompt_id: "p" };
    expect(v({ ...base, parent_node_id: null })).toBe(true);
    expect(v({ ...base, parent_node_id: "1" })).toBe(true);
    expect(v(base)).toBe(false);
  });
});

describe("examples", () => {
  it("gives every message at least one example", () => {
    for (const channel of ["jobEvents", "hostedSocket"]) {
      for (const [key, m] of Object.entries(channelMessages(channel))) {
        const examples = m["examples"];
        expect(Array.isArray(examples) && examples.length > 0, `${channel}.${key}`).toBe(true);
        for (const ex of examples as Obj[]) expect("payload" in ex, `${channel}.${key}`).toBe(true);
      }
    }
  });

  it("validates every JSON message example against its own payload schema", () => {
    const ajv = makeAjv();
    const keys = expectedKeys();
    expect([...keys.keys()].length).toBeGreaterThan(0);
    for (const [key, msg] of keys) {
      const v = validatorFor(ajv, key);
      for (const ex of msg["examples"] as Obj[]) {
        const ok = v(ex["payload"]);
        expect(ok ? [] : v.errors, `${key} example ${String(ex["name"])}`).toEqual([]);
      }
    }
  });

  it("validates the examples inside local schemas (the type-4 metadata)", () => {
    const ajv = makeAjv();
    const v = validatorFor(ajv, "ws.binary.preview_metadata");
    const examples = deref({ $ref: "#/components/schemas/PreviewImageMetadata" })["examples"] as unknown[];
    expect(examples.length).toBeGreaterThan(0);
    for (const ex of examples) expect(v(ex) ? [] : v.errors).toEqual([]);
  });

  it("compiles every payload schema of ours with no strictTypes or strictRequired finding", () => {
    const ajv = makeAjv();
    for (const key of Object.keys(schemas)) validatorFor(ajv, key);
    const ours = strictTypeFindings.filter((w) => !w.includes(OPENAPI_SCHEMA_ID));
    expect(ours).toEqual([]);
    const theirs = [...new Set(strictTypeFindings.filter((w) => w.includes(OPENAPI_SCHEMA_ID)))];
    if (theirs.length > 0) console.warn(`strict-mode findings in spec/openapi.yaml:\n${theirs.join("\n")}`);
  });

  it("rejects a broken example (the example check can fail)", () => {
    const ajv = makeAjv();
    const preview = structuredClone((expectedKeys().get("sse.preview")!["examples"] as Obj[])[0]!["payload"]) as Obj;
    delete preview["data_base64"];
    expect(validatorFor(ajv, "sse.preview")(preview)).toBe(false);
    const status = structuredClone((expectedKeys().get("sse.status")!["examples"] as Obj[])[0]!["payload"]) as Obj;
    status["logs"] = { text: "", truncated: false, captured_at: "2026-11-21T10:00:03.000Z" };
    expect(validatorFor(ajv, "sse.status")(status)).toBe(false);
  });
});

describe("asyncapiMessageSchemas()", () => {
  it("keys exactly the JSON messages plus the type-4 metadata, sorted", () => {
    const expected = [...expectedKeys().keys(), "ws.binary.preview_metadata"].sort();
    expect(Object.keys(schemas)).toEqual(expected);
  });

  it("rewrites refs into openapi.yaml to OPENAPI_SCHEMA_ID and keeps local refs resolvable in $defs", () => {
    const names = new Set(Object.keys(asObj(asObj(openapi["components"], "components")["schemas"], "schemas")));
    for (const [key, schema] of Object.entries(schemas)) {
      const defs = isObj((schema as Obj)["$defs"]) ? ((schema as Obj)["$defs"] as Obj) : {};
      for (const m of JSON.stringify(schema).matchAll(/"\$ref":"([^"]*)"/g)) {
        const ref = m[1]!;
        if (ref.startsWith("#/$defs/")) expect(defs, `${key}: ${ref}`).toHaveProperty(ref.slice(8));
        else {
          expect(ref.startsWith(`${OPENAPI_SCHEMA_ID}#/components/schemas/`), `${key}: ${ref}`).toBe(true);
          expect(names.has(ref.split("/").pop()!), `${key}: ${ref}`).toBe(true);
        }
      }
      expect(JSON.stringify(schema)).not.toContain("./openapi.yaml");
      expect(collectKeys(schema, new Set()).size, `${key} carries no x-* keywords`).toBe(0);
    }
  });

  it("is deterministic", async () => {
    expect(JSON.stringify(await asyncapiMessageSchemas())).toBe(JSON.stringify(schemas));
  });
});

describe("generateAsyncApiTypes()", () => {
  let source: string;
  beforeAll(async () => {
    source = await generateAsyncApiTypes();
  });

  it("is deterministic and carries the generated-file header", async () => {
    expect(await generateAsyncApiTypes()).toBe(source);
    expect(source.split("\n")[0]).toBe("// Generated by npm run generate from spec/asyncapi.yaml. Do not edit.");
    expect(source).toContain('import type { components } from "./openapi-types.ts";');
  });

  it("declares the event unions, frame constants and the metadata type", () => {
    for (const name of DECISION_SSE_EVENTS) expect(source).toContain(`| { event: "${name}"; data: `);
    for (const type of SEED_WS_TYPES) expect(source).toMatch(new RegExp(`type: "${type}";`));
    expect(source).toMatch(/export type WsMessage =/);
    expect(source).toMatch(/export const BinaryFrameType = \{\n {2}PREVIEW_IMAGE: 1,\n {2}TEXT: 3,\n {2}PREVIEW_IMAGE_WITH_METADATA: 4,\n\} as const;/);
    expect(source).toMatch(/export const PreviewImageType = \{\n {2}JPEG: 1,\n {2}PNG: 2,\n\} as const;/);
    expect(source).toContain("export type PreviewImageMetadata = {");
    expect(source).toContain('export type SseStatus = components["schemas"]["JobWithoutLogs"];');
  });

  it("typechecks under the project's compiler options", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "flowgate-asyncapi-types-"));
    try {
      // Stand-in for openapi-typescript's output: every component schema name of openapi.yaml,
      // so a ref to a name that does not exist fails to compile.
      const names = Object.keys(asObj(asObj(openapi["components"], "components")["schemas"], "schemas"));
      const stub = `export interface components {\n  schemas: {\n${names.map((n) => `    ${JSON.stringify(n)}: { readonly __schema: ${JSON.stringify(n)} };`).join("\n")}\n  };\n}\n`;
      const real = path.join(ROOT, "generated", "openapi-types.ts");
      const usesReal = existsSync(real);
      await writeFile(path.join(dir, "openapi-types.ts"), usesReal ? await readFile(real, "utf8") : stub);
      await writeFile(path.join(dir, "package.json"), '{"type":"module"}\n');
      await writeFile(path.join(dir, "asyncapi-types.ts"), source);
      // Uses the unions so that a broken discriminant is a compile error too.
      await writeFile(
        path.join(dir, "use.ts"),
        [
          'import type { SseEvent, WsMessage, PreviewImageMetadata } from "./asyncapi-types.ts";',
          'import { BinaryFrameType } from "./asyncapi-types.ts";',
          "export function f(e: SseEvent, m: WsMessage, meta: PreviewImageMetadata): unknown {",
          '  if (e.event === "preview") return e.data.data_base64;',
          '  if (m.type === "executing") return m.data.node ?? meta.parent_node_id;',
          '  if (m.type === "execution_error") return m.data.exception_type;',
          "  return BinaryFrameType.PREVIEW_IMAGE_WITH_METADATA;",
          "}",
          "",
        ].join("\n"),
      );
      const program = ts.createProgram([path.join(dir, "use.ts")], {
        target: ts.ScriptTarget.ES2023,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        strict: true,
        noUncheckedIndexedAccess: true,
        allowImportingTsExtensions: true,
        verbatimModuleSyntax: true,
        isolatedModules: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
      });
      const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      expect(diagnostics).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

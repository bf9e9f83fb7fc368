// The checks of one node's inputs with ComfyUI's rules: required inputs, links (their source and
// its output type), literals (file references, options, numbers and their bounds, strings), each
// finding reported in both shapes with a sentence for people. They prepare the node as they go.
import { parseAssetRef, isAssetObject } from "./asset-refs.ts";
import { comfyError, typeText, type ComfyErrorItem } from "./comfy-errors.ts";
import { isPlainObject, readLink } from "./graph.ts";
import { prefixProblem } from "./filenames.ts";
import { comboOptions, declaredInputs, findInput, type InputSpec, type InputType, type NodeDefinition } from "./node-spec.ts";
import { bigIntOf, exactInteger, isBigInteger, type RawJson } from "../domain/exact-json.ts";
import { pyBool, pyFloat, pyFloatRepr, pyInt, pyRepr, pyStr } from "./python.ts";
import { closest } from "./suggest.ts";
import type { PreparedNode, Report } from "./analysis.ts";

/** ComfyUI's validate_node_input: equal types, "*" on either side, or overlapping "A,B" unions. */
export function typesCompatible(received: string, expected: InputType): boolean {
  if (received === expected) return true;
  if (typeof expected !== "string") return false;
  const r = new Set(received.split(",").map((t) => t.trim()));
  const e = new Set(expected.split(",").map((t) => t.trim()));
  if (r.has("*") || e.has("*")) return true;
  for (const t of r) if (e.has(t)) return true;
  return false;
}

/** Longest `filename_prefix` a node may be given. */
export const MAX_FILENAME_PREFIX = 255;

const WIDGET_TYPES = new Set(["INT", "FLOAT", "STRING", "BOOLEAN"]);

/** ComfyUI's item with flowgate's hint beside its own fields (extra_info varies by type in ComfyUI too). */
export function withHint(item: ComfyErrorItem, hint: string): ComfyErrorItem {
  return { ...item, extra_info: { ...item.extra_info, hint } };
}

/** Where a file input's value comes from, said once for every hint that needs it. */
const UPLOAD_HINT = "Upload one (POST /api/v2/assets, or POST /api/upload/image on the hosted interface) and give its name or a core/ASSET reference.";

/** "image" for an image loader's input, "file" otherwise. */
function fileWord(def: NodeDefinition, name: string): string {
  return name === "image" || /Image/.test(def.name)
    ? "image"
    : name === "audio" || /Audio/.test(def.name)
      ? "audio file"
      : name === "video" || /Video/.test(def.name)
        ? "video"
        : "file";
}

/** A value as quoted in a message, cut short. */
function shown(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Checks a node's inputs, reporting each problem; the node prepared to run (what passed). */
export function checkNode(
  id: string,
  def: NodeDefinition,
  inputs: Record<string, unknown>,
  graph: Record<string, unknown>,
  known: Map<string, { def: NodeDefinition }>,
  issue: Report,
): PreparedNode {
  const prepared: PreparedNode = { id, class_type: def.name, def, literals: {}, links: {}, files: {} };
  const declared = declaredInputs(def);
  for (const name of declared) {
    const { spec, required } = findInput(def, name)!;
    if (!Object.hasOwn(inputs, name)) {
      if (!required) continue;
      // An input the node does not know whose name is near this one was likely meant for it.
      const given = Object.keys(inputs).find((k) => !declared.includes(k) && closest(k, [name]) === name);
      const hint =
        given !== undefined
          ? `It was given "${given}": did you mean "${name}"?`
          : def.fileInputs?.includes(name)
            ? `No ${fileWord(def, name)} was chosen. ${UPLOAD_HINT}`
            : undefined;
      issue(id, name, "missing_input", comfyError.requiredInputMissing(name), `${def.name} needs the input "${name}".`, hint);
      continue;
    }
    let value = inputs[name];
    if (Array.isArray(value)) {
      checkLink(id, def, name, spec, value, graph, known, prepared, issue);
      continue;
    }
    // ComfyUI unwraps {"__value__": x}, used to pass a list as a widget value.
    if (isPlainObject(value) && Object.hasOwn(value, "__value__")) value = value.__value__;
    checkLiteral(id, def, name, spec, value, prepared, issue);
  }
  return prepared;
}

function checkLink(
  id: string,
  def: NodeDefinition,
  name: string,
  spec: InputSpec,
  value: unknown[],
  graph: Record<string, unknown>,
  known: Map<string, { def: NodeDefinition }>,
  prepared: PreparedNode,
  issue: Report,
): void {
  const link = readLink(value);
  if (!link) {
    issue(
      id,
      name,
      "bad_link",
      comfyError.badLinkedInput(name, spec, value),
      `Input "${name}" holds a list that is not a link: a link is [node_id, output_index].`,
    );
    return;
  }
  const [from, index] = link;
  if (!Object.hasOwn(graph, from)) {
    issue(
      id,
      name,
      "bad_link",
      comfyError.exceptionDuringValidation("KeyError", `'${from}'`),
      `Input "${name}" links to node ${shown(from)}, which is not in the workflow.`,
    );
    return;
  }
  const source = known.get(from);
  // A source with a bad or unknown class carries its own error; nothing more to say here.
  if (!source) return;
  if (index >= source.def.output.length) {
    const n = source.def.output.length;
    issue(
      id,
      name,
      "bad_link",
      comfyError.exceptionDuringValidation("IndexError", "tuple index out of range"),
      `Input "${name}" links to output ${index} of node ${from} (${source.def.name}), which has ${n} output${n === 1 ? "" : "s"} (0${n > 1 ? `-${n - 1}` : ""}).`,
    );
    return;
  }
  const received = source.def.output[index]!;
  const isFile = def.fileInputs?.includes(name) ?? false;
  if (isFile || !typesCompatible(received, spec[0])) {
    const message = isFile
      ? `Input "${name}" takes an uploaded file name or a core/ASSET reference, not a link.`
      : `Input "${name}" takes ${typeText(spec[0])}, but output ${index} of node ${from} (${source.def.name}) is ${received}.`;
    issue(id, name, "type_mismatch", comfyError.returnTypeMismatch(name, spec, received, value), message);
    return;
  }
  prepared.links[name] = { from, index };
}

function checkLiteral(id: string, def: NodeDefinition, name: string, spec: InputSpec, value: unknown, prepared: PreparedNode, issue: Report): void {
  const type = spec[0];
  if (def.fileInputs?.includes(name)) {
    if (isAssetObject(value)) {
      const parsed = parseAssetRef(value);
      if ("problem" in parsed)
        issue(
          id,
          name,
          "type_mismatch",
          comfyError.invalidInputType(name, spec, value, `malformed core/ASSET reference: ${parsed.problem}`),
          `Input "${name}" holds a malformed core/ASSET reference: ${parsed.problem}.`,
        );
      else prepared.files[name] = { kind: "asset", ref: parsed.ref };
    } else if (typeof value === "string" && value.length > 0) {
      prepared.files[name] = { kind: "upload", name: value };
    } else if (typeof value === "string") {
      issue(
        id,
        name,
        "not_in_options",
        comfyError.valueNotInList(name, spec, value, []),
        `Input "${name}" is empty.`,
        `No ${fileWord(def, name)} was chosen. ${UPLOAD_HINT}`,
      );
    } else {
      issue(
        id,
        name,
        "type_mismatch",
        comfyError.invalidInputType(name, spec, value, "expected an uploaded file name or a core/ASSET reference"),
        `Input "${name}" takes an uploaded file name or a core/ASSET reference, not ${shown(value)}.`,
      );
    }
    return;
  }
  if (isAssetObject(value)) {
    issue(
      id,
      name,
      "type_mismatch",
      comfyError.invalidInputType(name, spec, value, "a core/ASSET reference is accepted only by file inputs"),
      `Input "${name}" is not a file input: a core/ASSET reference is accepted only by inputs such as LoadImage's image.`,
    );
    return;
  }
  if (type === "*") {
    prepared.literals[name] = value;
    return;
  }
  const options = comboOptions(spec);
  if (options) {
    if (!options.some((o) => o === value)) {
      const near =
        typeof value === "string"
          ? closest(
              value,
              options.filter((o): o is string => typeof o === "string"),
            )
          : null;
      const list = options.length <= 12 ? `: ${options.map(shown).join(", ")}` : ` (${options.length} of them)`;
      issue(
        id,
        name,
        "not_in_options",
        comfyError.valueNotInList(name, spec, value, options),
        `Input "${name}" is ${shown(value)}, not one of its options${list}.`,
        near ? `Did you mean "${near}"?` : undefined,
      );
    } else prepared.literals[name] = value;
    return;
  }
  if (typeof type !== "string" || !WIDGET_TYPES.has(type)) {
    issue(
      id,
      name,
      "type_mismatch",
      comfyError.invalidInputType(name, spec, value, `a ${typeof type === "string" ? type : "COMBO"} input takes a link`),
      `Input "${name}" takes a link from a node's ${typeof type === "string" ? type : "COMBO"} output, not a value.`,
    );
    return;
  }
  let coerced: unknown;
  if (type === "INT" || type === "FLOAT") {
    const c = type === "INT" ? intOf(value) : pyFloat(isBigInteger(value) ? Number(value.rawJSON) : value);
    if (!c.ok) {
      issue(
        id,
        name,
        "type_mismatch",
        comfyError.invalidInputType(name, spec, value, c.error),
        `Input "${name}" takes ${type === "INT" ? "a whole number" : "a number"}, not ${shown(value)}.`,
      );
      return;
    }
    coerced = c.value;
    const opts = spec[1] ?? {};
    const show = (n: unknown) => (type === "FLOAT" && typeof n === "number" ? pyFloatRepr(n) : pyRepr(n));
    if (isBound(opts.min) && compareNumbers(c.value, opts.min) < 0) {
      issue(
        id,
        name,
        "out_of_range",
        comfyError.valueSmallerThanMin(name, spec, c.value, opts.min, show),
        `Input "${name}" is ${show(c.value)}, below its minimum of ${show(opts.min)}.`,
      );
      return;
    }
    if (isBound(opts.max) && compareNumbers(c.value, opts.max) > 0) {
      issue(
        id,
        name,
        "out_of_range",
        comfyError.valueBiggerThanMax(name, spec, c.value, opts.max, show),
        `Input "${name}" is ${show(c.value)}, above its maximum of ${show(opts.max)}.`,
      );
      return;
    }
  } else if (type === "STRING") {
    coerced = pyStr(value); // an exact integer's digits, as Python's str()
    // Output names come back in every read of the job: a prefix is bounded like a path.
    if (name === "filename_prefix" && (coerced as string).length > MAX_FILENAME_PREFIX) {
      issue(
        id,
        name,
        "out_of_range",
        comfyError.invalidInputType(name, spec, `${(coerced as string).slice(0, 32)}...`, `filename_prefix is longer than ${MAX_FILENAME_PREFIX} characters`),
        `Input "filename_prefix" is longer than ${MAX_FILENAME_PREFIX} characters.`,
      );
      return;
    }
    // A prefix that leaves the output folder would fail only when the node saves: refuse it now.
    const problem = name === "filename_prefix" ? prefixProblem(coerced as string) : null;
    if (problem !== null) {
      issue(id, name, "out_of_range", comfyError.invalidInputType(name, spec, coerced, problem), `Input "filename_prefix" is not allowed: ${problem}`);
      return;
    }
  } else {
    coerced = pyBool(value);
  }
  prepared.literals[name] = coerced;
}

/** int(v), exact beyond 2^53 (Python's ints are): such an integer stays a raw JSON integer. */
function intOf(v: unknown): { ok: true; value: number | RawJson } | { ok: false; error: string } {
  if (isBigInteger(v)) return { ok: true, value: v };
  if (typeof v === "string" && /^\s*[+-]?\d(?:_?\d)*\s*$/.test(v)) {
    const n = BigInt(v.trim().replace(/_/g, ""));
    return { ok: true, value: exactInteger(n) };
  }
  return pyInt(v);
}

/** A bound of a number input: a number, or an exact integer beyond 2^53 (ComfyUI's seeds go to 2^64 - 1). */
function isBound(v: unknown): v is number | RawJson {
  return typeof v === "number" || isBigInteger(v);
}

/** The sign of a - b, exact where either is an integer beyond 2^53. */
function compareNumbers(a: number | RawJson, b: number | RawJson): number {
  if (typeof a === "number" && typeof b === "number") return Math.sign(a - b);
  const ia = bigIntOf(a);
  const ib = bigIntOf(b);
  if (ia !== null && ib !== null) return ia < ib ? -1 : ia > ib ? 1 : 0;
  // A fraction against a huge integer: doubles order them correctly.
  const na = typeof a === "number" ? a : Number(a.rawJSON);
  const nb = typeof b === "number" ? b : Number(b.rawJSON);
  return Math.sign(na - nb);
}

// The contract's own files, read at run time: spec/openapi.yaml and spec/asyncapi.yaml, beside
// conformance/ in a checkout and one level further up from its build (dist/conformance).
import { existsSync, readFileSync } from "node:fs";
import YAML from "yaml";

/** A parsed YAML document, loosely typed. */
export type SpecDoc = Record<string, unknown>;

function specUrl(name: string): URL {
  const beside = new URL(`../../spec/${name}`, import.meta.url);
  return existsSync(beside) ? beside : new URL(`../../../spec/${name}`, import.meta.url);
}

const cache = new Map<string, SpecDoc>();

function load(name: string): SpecDoc {
  let doc = cache.get(name);
  if (!doc) cache.set(name, (doc = YAML.parse(readFileSync(specUrl(name), "utf8")) as SpecDoc));
  return doc;
}

/** spec/openapi.yaml, parsed once. */
export function openapiDoc(): SpecDoc {
  return load("openapi.yaml");
}

/** spec/asyncapi.yaml, parsed once. */
export function asyncapiDoc(): SpecDoc {
  return load("asyncapi.yaml");
}

/** Follows local `$ref`s (`#/a/b`) within a document. */
export function deref(doc: SpecDoc, s: unknown): SpecDoc {
  let cur = s as SpecDoc;
  for (let i = 0; i < 20 && cur && typeof cur.$ref === "string"; i++) {
    cur = (cur.$ref as string)
      .replace(/^#\//, "")
      .split("/")
      .reduce<unknown>((o, k) => (o as SpecDoc)?.[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc) as SpecDoc;
  }
  return cur ?? {};
}

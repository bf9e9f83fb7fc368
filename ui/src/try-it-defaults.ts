// The API reference's copy of the OpenAPI document. Scalar's try-it fills an optional object-valued
// query parameter (a deepObject filter such as the job list's `metadata[key]=value`) from its
// schema's `examples[0]` whatever the parameter itself says, ticked: a first try would then filter
// by an example label and list nothing. Only this copy drops those examples; /docs/openapi.yaml,
// the file other tools read, is served unchanged.

// biome-ignore lint/suspicious/noExplicitAny: parsed OpenAPI YAML, walked by its shape as the spec defines it.
type Yaml = any;

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

function resolve(doc: Yaml, node: Yaml): Yaml {
  const ref: unknown = node?.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return node;
  return ref
    .slice(2)
    .split("/")
    .reduce((at: Yaml, key) => at?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
}

/** Optional deepObject query parameters of `doc` get no example and a schema without examples, so the try-it leaves them empty and unticked. */
export function withEmptyFilters(doc: Yaml): Yaml {
  for (const item of Object.values<Yaml>(doc?.paths ?? {})) {
    for (const operation of [item, ...METHODS.map((method) => item?.[method])]) {
      if (!Array.isArray(operation?.parameters)) continue;
      operation.parameters = operation.parameters.map((reference: Yaml) => {
        const parameter = resolve(doc, reference);
        if (parameter?.in !== "query" || parameter.style !== "deepObject" || parameter.required) return reference;
        const { example: _example, examples: _examples, schema, ...rest } = parameter;
        const { examples: _schemaExamples, example: _schemaExample, ...bareSchema } = resolve(doc, schema) ?? {};
        return { ...rest, schema: bareSchema };
      });
    }
  }
  return doc;
}

// /docs/events: the event catalogue from spec/asyncapi.yaml (the SSE job stream and the hosted
// WebSocket), rendered here because the OpenAPI renderer does not read AsyncAPI.
import "./style.css";
import { parse } from "yaml";
import { h, replace } from "./dom.ts";

// biome-ignore lint/suspicious/noExplicitAny: parsed AsyncAPI YAML, walked by its shape as the spec defines it.
type Yaml = any;
type Doc = Record<string, Yaml>;

const main = document.getElementById("main")!;

/** A little Markdown: paragraphs, bullet lists, `code` and **bold**; everything else is text. */
function markdown(text: string | undefined): HTMLElement[] {
  if (!text) return [];
  return text
    .trim()
    .split(/\n\s*\n/)
    .map((block) => {
      const lines = block.split("\n");
      if (lines.every((l) => /^\s*[*-] |^\s{2,}\S/.test(l))) {
        const items: string[] = [];
        for (const l of lines) {
          if (/^\s*[*-] /.test(l)) items.push(l.replace(/^\s*[*-] /, ""));
          else items[items.length - 1] += ` ${l.trim()}`;
        }
        return h("ul", {}, ...items.map((i) => h("li", {}, ...inline(i))));
      }
      return h("p", {}, ...inline(lines.join(" ")));
    });
}

function inline(text: string): (Node | string)[] {
  return text.split(/(`[^`]+`|\*\*[^*]+\*\*)/).map((part) => {
    if (part.startsWith("`") && part.endsWith("`")) return h("code", {}, part.slice(1, -1));
    if (part.startsWith("**") && part.endsWith("**")) return h("strong", {}, part.slice(2, -2));
    return part;
  });
}

/** Follows a local `#/...` reference. */
function deref(doc: Doc, node: Yaml): Yaml {
  if (node && typeof node.$ref === "string" && node.$ref.startsWith("#/")) {
    return node.$ref
      .slice(2)
      .split("/")
      .reduce((at: Yaml, key: string) => at?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
  }
  return node;
}

function schemaName(ref: string): HTMLElement {
  const name = ref.split("/").pop()!;
  // Schemas of openapi.yaml are documented in the API reference.
  return ref.startsWith("./openapi.yaml") ? h("a", { href: `/docs#model/${name.toLowerCase()}` }, name) : h("code", {}, name);
}

function payload(doc: Doc, raw: Yaml): HTMLElement | null {
  if (!raw) return null;
  if (typeof raw.$ref === "string" && !raw.$ref.startsWith("#/")) return h("p", {}, "Payload: ", schemaName(raw.$ref));
  const schema = deref(doc, raw);
  const props = schema?.properties as Record<string, Yaml> | undefined;
  const head = h(
    "p",
    {},
    "Payload",
    typeof raw.$ref === "string" ? h("span", {}, ": ", schemaName(raw.$ref)) : null,
    schema?.type ? h("span", { className: "muted" }, ` (${[schema.type].flat().join(" | ")})`) : null,
  );
  if (!props) return h("div", {}, head, ...markdown(schema?.description));
  const required = new Set<string>(schema.required ?? []);
  return h(
    "div",
    {},
    head,
    h(
      "table",
      { className: "props" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Field"), h("th", { scope: "col" }, "Type"), h("th", { scope: "col" }, "Description"))),
      h(
        "tbody",
        {},
        ...Object.entries(props).map(([name, p]) => {
          const ref = typeof p?.$ref === "string" ? schemaName(p.$ref) : null;
          const type = p?.type ? [p.type].flat().join(" | ") : p?.const !== undefined ? JSON.stringify(p.const) : p?.enum ? p.enum.map(String).join(" | ") : "";
          return h(
            "tr",
            {},
            h("td", {}, h("code", {}, name), required.has(name) ? h("span", { className: "muted small" }, " required") : null),
            h("td", {}, ref ?? type),
            h("td", {}, ...markdown(p?.description)),
          );
        }),
      ),
    ),
  );
}

function render(doc: Doc): void {
  const channels = Object.entries((doc.channels ?? {}) as Record<string, Doc>);
  replace(
    main,
    h("h1", {}, doc.info?.title ?? "Events", h("span", { className: "muted small" }, ` v${doc.info?.version ?? ""}`)),
    ...markdown(doc.info?.description),
    h("nav", { "aria-label": "Channels", className: "toc" }, h("ul", {}, ...channels.map(([id, c]) => h("li", {}, h("a", { href: `#${id}` }, c.title ?? id))))),
    ...channels.map(([id, channel]) =>
      h(
        "section",
        { className: "card", id, "aria-labelledby": `${id}-title` },
        h("h2", { id: `${id}-title` }, channel.title ?? id),
        h("p", {}, h("code", { className: "address" }, channel.address ?? "")),
        ...markdown(channel.description),
        h("h3", {}, "Messages"),
        ...Object.entries((channel.messages ?? {}) as Record<string, Doc>).map(([key, ref]) => {
          const m = deref(doc, ref) ?? {};
          const example = m.examples?.[0]?.payload;
          return h(
            "article",
            { className: "message", id: `${id}-${key}` },
            h("h4", {}, h("code", {}, m.name ?? key), m.title ? h("span", { className: "muted" }, ` ${m.title}`) : null),
            m.summary ? h("p", {}, h("strong", {}, m.summary)) : null,
            ...markdown(m.description),
            payload(doc, m.payload),
            example !== undefined ? h("details", {}, h("summary", {}, "Example"), h("pre", {}, JSON.stringify(example, null, 2))) : null,
          );
        }),
      ),
    ),
  );
}

fetch("/docs/asyncapi.yaml")
  .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`HTTP ${r.status}`))))
  .then((text) => render(parse(text) as Doc))
  .catch((err: Error) => replace(main, h("p", { role: "alert" }, `Could not load the event catalogue: ${err.message}`)));

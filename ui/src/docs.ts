// /docs: the OpenAPI reference rendered by Scalar's standalone bundle, served by this server
// (no CDN, no default web fonts, no telemetry), with a link to the event catalogue.
import { parse } from "yaml";
import { withEmptyFilters } from "./try-it-defaults.ts";

declare global {
  interface Window {
    Scalar: { createApiReference(target: string, config: Record<string, unknown>): unknown };
  }
}

const reference = {
  withDefaultFonts: false,
  telemetry: false,
  // No hosted extras: no AI agent, no MCP generator, no developer toolbar (they call scalar.com).
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  // Requests from the reference go to the server that serves it.
  servers: [{ url: window.location.origin, description: "This server" }],
  metaData: { title: "flowgate API reference" },
};

// Scalar reads the page's own copy of the document, in which the try-it starts with no label
// filter (see try-it-defaults.ts); a document that cannot be read is left to Scalar to report.
fetch("/docs/openapi.yaml")
  .then((response) => response.text())
  .then((text) => withEmptyFilters(parse(text)))
  .then(
    (content) => window.Scalar.createApiReference("#reference", { ...reference, content }),
    () => window.Scalar.createApiReference("#reference", { ...reference, url: "/docs/openapi.yaml" }),
  );

// Links out of the reference: back to the dashboard, and to the AsyncAPI catalogue, which Scalar does not render.
const links = document.createElement("nav");
links.setAttribute("aria-label", "flowgate");
links.style.cssText = "position:fixed;right:16px;bottom:16px;z-index:1000;display:flex;gap:8px";
for (const [href, text, id] of [
  ["/", "← Dashboard", "flowgate-dashboard-link"],
  ["/docs/events", "Event catalogue (SSE and WebSocket) →", "flowgate-events-link"],
] as const) {
  const link = document.createElement("a");
  link.href = href;
  link.textContent = text;
  link.id = id;
  link.className = "flowgate-events-link";
  link.style.cssText =
    "padding:8px 12px;border-radius:6px;background:#4f46e5;color:#fff;font:13px system-ui,sans-serif;text-decoration:none;box-shadow:0 2px 8px rgba(0,0,0,.2)";
  links.append(link);
}
document.body.append(links);

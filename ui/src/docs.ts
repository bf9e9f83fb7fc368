// /docs: the OpenAPI reference rendered by Scalar's standalone bundle, served by this server
// (no CDN, no default web fonts, no telemetry), with a link to the event catalogue.
declare global {
  interface Window {
    Scalar: { createApiReference(target: string, config: Record<string, unknown>): unknown };
  }
}

window.Scalar.createApiReference("#reference", {
  url: "/docs/openapi.yaml",
  withDefaultFonts: false,
  telemetry: false,
  // No hosted extras: no AI agent, no MCP generator, no developer toolbar (they call scalar.com).
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  // Requests from the reference go to the server that serves it.
  servers: [{ url: window.location.origin, description: "This server" }],
  customCss: ".flowgate-events-link{display:block;margin:8px 12px;font-size:13px}",
  metaData: { title: "flowgate API reference" },
});

// A link to the AsyncAPI catalogue, which Scalar does not render.
const link = document.createElement("a");
link.href = "/docs/events";
link.textContent = "Event catalogue (SSE and WebSocket) →";
link.className = "flowgate-events-link";
link.style.cssText =
  "position:fixed;right:16px;bottom:16px;z-index:1000;padding:8px 12px;border-radius:6px;background:#4f46e5;color:#fff;font:13px system-ui,sans-serif;text-decoration:none;box-shadow:0 2px 8px rgba(0,0,0,.2)";
document.body.append(link);

export {};

// Media types a browser renders as an active document (script in the page's origin), which a
// download link must never show inline: ComfyUI's /view sends them as attachments.

const ACTIVE = new Set([
  "text/html",
  "application/xhtml+xml",
  "image/svg+xml",
  "text/xml",
  "application/xml",
  "text/javascript",
  "application/javascript",
  "application/ecmascript",
  "text/css",
]);

/** Whether bytes of this media type (parameters ignored) can run script when a browser opens them. */
export function isActiveContentType(contentType: string): boolean {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return ACTIVE.has(type) || type.endsWith("+xml");
}

/** `Content-Disposition` of a download: shown inline (an active type, which could run script, as an attachment), saved under its own name. */
export function contentDisposition(fileName: string, contentType = "application/octet-stream"): string {
  const base = fileName.split("/").pop() || "download";
  const ascii = base.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `${isActiveContentType(contentType) ? "attachment" : "inline"}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(base)}`;
}

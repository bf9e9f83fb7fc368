// Which media types a download serves as an attachment (they could run script in the origin).
import { describe, expect, it } from "vitest";
import { contentDisposition, isActiveContentType } from "../../src/domain/content-types.ts";

describe("active content types", () => {
  it("are HTML, SVG, XML, JavaScript and CSS, whatever the case and parameters", () => {
    for (const t of [
      "text/html",
      "TEXT/HTML; charset=utf-8",
      "image/svg+xml",
      "application/xhtml+xml",
      "application/xml",
      "application/rss+xml",
      "text/javascript",
      "text/css",
    ])
      expect(isActiveContentType(t), t).toBe(true);
    for (const t of ["image/png", "image/jpeg", "video/mp4", "text/plain", "application/json", "application/octet-stream"])
      expect(isActiveContentType(t), t).toBe(false);
  });

  it("are downloads as attachments; the rest inline, under their own name", () => {
    expect(contentDisposition("out/page.html", "text/html")).toBe(`attachment; filename="page.html"; filename*=UTF-8''page.html`);
    expect(contentDisposition("a.png", "image/png")).toMatch(/^inline; filename="a.png"/);
    expect(contentDisposition('we"ird é.svg', "image/svg+xml")).toBe(`attachment; filename="we_ird _.svg"; filename*=UTF-8''we%22ird%20%C3%A9.svg`);
  });
});

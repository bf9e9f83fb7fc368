// The API reference at /docs: its 4.3 MB Scalar bundle goes compressed (brotli or gzip, as the
// browser accepts) with an ETag a revisit turns into a 304; and "List jobs" does not come with
// status=queued filled in and sent (Scalar's own rules, read from the package the bundle is built from).
import { readFile } from "node:fs/promises";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { getParameterExample } from "@scalar/workspace-store/helpers/get-parameter-example";
import { isParamDisabled } from "@scalar/workspace-store/request-example";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { chooseEncoding } from "../../src/server/compressed-files.ts";
import { UI_DIST } from "../../src/server/ui.ts";
import { startTestServer, type TestServer } from "./helpers.ts";

const BUNDLE = "/ui/scalar/standalone.js";

let server: TestServer;
let original: Buffer;
beforeAll(async () => {
  server = await startTestServer();
  original = await readFile(`${UI_DIST}/scalar/standalone.js`);
});
afterAll(() => server?.stop());

/** A GET with Node's own HTTP client: fetch would decompress and hide the encoding. */
async function get(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    request(`${server.url}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body: Buffer.concat(chunks) }));
    })
      .on("error", reject)
      .end();
  });
}

describe("GET /ui/scalar/standalone.js", () => {
  it("is the bundle of /docs and over a megabyte as it stands", async () => {
    expect((await readFile(`${UI_DIST}/docs.html`, "utf8")).includes(BUNDLE)).toBe(true);
    expect(original.length).toBeGreaterThan(1024 * 1024);
  });

  it("goes in brotli or gzip as the request accepts, the same bytes once decoded, a quarter of the size or less", async () => {
    const br = await get(BUNDLE, { "accept-encoding": "gzip, deflate, br" });
    expect(br.status).toBe(200);
    expect(br.headers.get("content-encoding")).toBe("br");
    expect(br.headers.get("vary")).toMatch(/accept-encoding/i);
    expect(br.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(brotliDecompressSync(br.body).equals(original)).toBe(true);
    expect(br.body.length).toBeLessThan(original.length / 3);
    const gz = await get(BUNDLE, { "accept-encoding": "gzip" });
    expect(gz.headers.get("content-encoding")).toBe("gzip");
    expect(gunzipSync(gz.body).equals(original)).toBe(true);
    const plain = await get(BUNDLE, {});
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.body.equals(original)).toBe(true);
  });

  it("carries an ETag per encoding, and a revisit with it is a 304 without a body", async () => {
    const first = await get(BUNDLE, { "accept-encoding": "br" });
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]+-br"$/);
    expect(first.headers.get("cache-control")).toBeTruthy();
    const again = await get(BUNDLE, { "accept-encoding": "br", "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const gz = await get(BUNDLE, { "accept-encoding": "gzip", "if-none-match": etag });
    expect(gz.status).toBe(200); // another representation, another tag
    expect(gz.headers.get("etag")).not.toBe(etag);
  });

  it("HEAD answers the headers only", async () => {
    const res = await fetch(`${server.url}${BUNDLE}`, { method: "HEAD", headers: { "accept-encoding": "br" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toMatch(/-br"$/);
  });

  it("reads Accept-Encoding's q values", () => {
    expect(chooseEncoding("gzip, br;q=0")).toBe("gzip");
    expect(chooseEncoding("*")).toBe("br");
    expect(chooseEncoding("identity")).toBe("identity");
    expect(chooseEncoding(undefined)).toBe("identity");
    expect(chooseEncoding("br;q=0, gzip;q=0")).toBe("identity");
  });
});

describe("List jobs in the reference", () => {
  it("leaves the status filter off: no status is filled in and sent", async () => {
    const spec = parse(await readFile(new URL("../../spec/openapi.yaml", import.meta.url), "utf8"));
    const resolve = (p: Record<string, unknown>) => ({ ...p, schema: spec.components.schemas.JobStatus });
    const status = (spec.paths["/api/v2/jobs"].get.parameters as Array<Record<string, unknown>>).find((p) => p.name === "status")!;
    const param = resolve(status);
    expect(isParamDisabled(param as never, getParameterExample(param as never, undefined).example as never)).toBe(true);
    // Without its example, Scalar takes the enum's first value and sends it: the defect.
    const bare = resolve({ ...status, examples: undefined });
    delete (bare as Record<string, unknown>).examples;
    const example = getParameterExample(bare as never, undefined);
    expect(example.value).toBe("queued");
    expect(isParamDisabled(bare as never, example.example as never)).toBe(false);
  });
});

// The AWS SDK is an optional peer dependency: an install for SQLite and files has none, and a bucket
// configured without it is a clear exit 2 naming what to install. "Missing" is made by a resolver
// hook that refuses @aws-sdk/* (and by the store's loader seam), not by uninstalling.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MissingPackageError, openBlobStore } from "../../src/blobs/index.ts";
import { runCli } from "./cli.ts";

let dir = "";
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowgate-no-sdk-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const notFound = (specifier: string) =>
  Object.assign(new Error(`Cannot find package '${specifier}' imported from /x/s3-blob-store.ts`), { code: "ERR_MODULE_NOT_FOUND" });

describe("the AWS SDK, optional", () => {
  it("openBlobStore: a missing SDK says what to install; other failures pass through", async () => {
    const config = { dataDir: dir, blobDir: null, blobStore: "s3://my-bucket/p", s3Endpoint: null };
    const missing = openBlobStore(config, () => Promise.reject(notFound("@aws-sdk/client-s3")));
    await expect(missing).rejects.toBeInstanceOf(MissingPackageError);
    await expect(missing).rejects.toThrow(
      "--blob-store s3://my-bucket/p needs @aws-sdk/client-s3 and @aws-sdk/s3-request-presigner, not installed: npm install @aws-sdk/client-s3 @aws-sdk/s3-request-presigner",
    );
    const other = new Error("boom");
    await expect(openBlobStore(config, () => Promise.reject(other))).rejects.toBe(other);
  });

  it("serve --blob-store s3://... without the SDK exits 2 at once with one line", async () => {
    const hook = join(dir, "no-aws-sdk.mjs");
    await writeFile(
      hook,
      `import { registerHooks } from "node:module";\n` +
        `registerHooks({ resolve(specifier, context, next) {\n` +
        `  if (specifier.startsWith("@aws-sdk/")) throw Object.assign(new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL), { code: "ERR_MODULE_NOT_FOUND" });\n` +
        `  return next(specifier, context);\n} });\n`,
    );
    const r = await runCli(["serve", "--port", "0", "--data-dir", join(dir, "data"), "--blob-store", "s3://my-bucket/p"], {
      NODE_OPTIONS: `--import=${hook}`,
    });
    expect(r.code).toBe(2);
    expect(r.stdout).not.toContain("listening");
    expect(r.stderr).toBe(
      "flowgate serve: --blob-store s3://my-bucket/p needs @aws-sdk/client-s3 and @aws-sdk/s3-request-presigner, not installed: npm install @aws-sdk/client-s3 @aws-sdk/s3-request-presigner\n",
    );
  });
});

// The project's Spectral rules pass on the spec and fire on a spec that breaks them.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../generators/spec-files.ts";
import { validateAsyncApi } from "../../generators/asyncapi.ts";

function spectral(dir: string): { status: number | null; rules: string[] } {
  const r = spawnSync(
    path.join(ROOT, "node_modules", ".bin", "spectral"),
    ["lint", path.join(dir, "openapi.yaml"), "--ruleset", path.join(dir, ".spectral.yaml"), "-f", "json", "--fail-severity", "warn"],
    { encoding: "utf8" },
  );
  const json = r.stdout.slice(r.stdout.indexOf("["), r.stdout.lastIndexOf("]") + 1);
  return { status: r.status, rules: (JSON.parse(json || "[]") as Array<{ code: string }>).map((x) => x.code) };
}

describe("npm run lint:spec", () => {
  it("spec/openapi.yaml has no error and no warning", () => {
    const r = spectral(path.join(ROOT, "spec"));
    expect(r.rules).toEqual([]);
    expect(r.status).toBe(0);
  }, 60_000);

  it("the project's rules fire on a broken copy", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "flowgate-lint-"));
    try {
      copyFileSync(path.join(ROOT, "spec", ".spectral.yaml"), path.join(dir, ".spectral.yaml"));
      let s = readFileSync(path.join(ROOT, "spec", "openapi.yaml"), "utf8");
      // An error response that is not the envelope, a property without description, a 429 without Retry-After.
      s = s.replace(
        "      x-error-codes: [unauthorized]\n      content:\n        application/json:\n          schema:\n            $ref: '#/components/schemas/ErrorEnvelope'",
        "      x-error-codes: [unauthorized]\n      content:\n        application/json:\n          schema:\n            $ref: '#/components/schemas/HostedError'",
      );
      s = s.replace("          description: Nodes finished (executed or served from cache).\n", "");
      s = s.replace(
        "      x-error-codes: [rate_limited]\n      headers:\n        Retry-After:\n          $ref: '#/components/headers/RetryAfter'\n",
        "      x-error-codes: [rate_limited]\n",
      );
      writeFileSync(path.join(dir, "openapi.yaml"), s);
      const r = spectral(dir);
      expect(r.status).not.toBe(0);
      expect(r.rules).toContain("flowgate-v2-errors-use-envelope");
      expect(r.rules).toContain("flowgate-property-description");
      expect(r.rules).toContain("flowgate-429-retry-after");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("spec/asyncapi.yaml validates with no error diagnostics", async () => {
    const r = await validateAsyncApi();
    expect(r.errors).toEqual([]);
  }, 60_000);
});

// `npm run generate` is idempotent and generated/ matches the spec (the drift check CI also runs).
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { generate } from "../../generators/generate.ts";
import { GENERATED_DIR } from "../../generators/spec-files.ts";
import { routes } from "../../generated/routes.ts";
import { loadOpenApi, operations } from "../../generators/spec-files.ts";

async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    out.set(path.relative(dir, full), await readFile(full, "utf8"));
  }
  return out;
}

describe("npm run generate", () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it("produces identical output twice, identical to the committed generated/", async () => {
    const a = await mkdtemp(path.join(tmpdir(), "flowgate-gen-a-"));
    const b = await mkdtemp(path.join(tmpdir(), "flowgate-gen-b-"));
    dirs.push(a, b);
    await generate(a);
    await generate(b);
    const [sa, sb, committed] = await Promise.all([snapshot(a), snapshot(b), snapshot(GENERATED_DIR)]);
    expect(sa.size).toBeGreaterThan(5);
    expect([...sa.keys()].sort()).toEqual([...sb.keys()].sort());
    for (const [file, text] of sa) expect(sb.get(file), file).toBe(text);
    expect([...committed.keys()].sort()).toEqual([...sa.keys()].sort());
    for (const [file, text] of sa) expect(committed.get(file), `generated/${file} is stale: run npm run generate`).toBe(text);
  }, 120_000);

  it("the route table has one entry per operation of the spec", () => {
    const ops = operations(loadOpenApi());
    expect(routes.map((r) => r.operationId)).toEqual(ops.map((o) => o.op.operationId));
    const create = routes.find((r) => r.operationId === "createJob")!;
    expect(create.url).toBe("/api/v2/jobs");
    expect(create.requestBody?.validator).toBe("request_createJob");
    expect(create.responses["429"]?.retryAfter).toBe(true);
    expect(create.responses["422"]?.errorCodes).toContain("idempotency_key_reuse");
    expect(routes.find((r) => r.operationId === "getJob")!.url).toBe("/api/v2/jobs/:id");
  });
});

// The layers of src/ import downward only (docs/architecture.md): a folder may import from a
// folder of a lower layer, never from its own layer's neighbours or from above. This test reads
// every relative import of every source file, so a new upward import fails here, not in review.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "../../src");

/** Layer of each top-level folder of src/ (and of generated/, outside it); higher imports lower. */
const LAYERS: Record<string, number> = {
  generated: -1,
  domain: 0,
  wire: 0,
  client: 1,
  store: 1,
  blobs: 1,
  engine: 1,
  datadir: 1,
  config: 1,
  assets: 2,
  jobs: 3,
  relay: 4,
  metrics: 4,
  surfaces: 4,
  runtime: 5,
  server: 6,
  cli: 7,
  "index.ts": 8,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
  );
}

/** The top-level folder of src/ a path is in ("generated" for generated/). */
function unitOf(file: string): string {
  const rel = path.relative(SRC, file);
  if (rel.startsWith(`..${path.sep}generated`)) return "generated";
  return rel.split(path.sep)[0]!;
}

/** Every cross-folder import of src/, as "from -> to (file: specifier)". */
function crossImports(): Array<{ from: string; to: string; where: string }> {
  const out: Array<{ from: string; to: string; where: string }> = [];
  for (const file of sourceFiles(SRC)) {
    const from = unitOf(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
      const to = unitOf(path.resolve(path.dirname(file), m[1]!));
      if (to !== from) out.push({ from, to, where: `${path.relative(SRC, file)}: ${m[1]}` });
    }
  }
  return out;
}

describe("layers", () => {
  it("every folder of src/ has a layer", () => {
    const units = new Set(sourceFiles(SRC).map(unitOf));
    expect([...units].filter((u) => !(u in LAYERS))).toEqual([]);
  });

  it("other folders reach store/ and engine/ through their entry point (index.ts)", () => {
    // The CLI's spelling suggestions: the engine's entry would load every engine at each command's start.
    const allowed = new Set(["cli/suggest.ts: ../engine/suggest.ts"]);
    const deep = crossImports()
      .filter(({ to, where }) => (to === "store" || to === "engine") && !/\/(store|engine)\/index\.ts$/.test(where) && !allowed.has(where))
      .map((i) => `${i.from} -> ${i.to} (${i.where})`);
    expect(deep).toEqual([]);
  });

  it("imports go to a lower layer only", () => {
    const imports = crossImports();
    expect(imports.length).toBeGreaterThan(50); // the scan sees the imports it judges
    const upward = imports.filter(({ from, to }) => !(LAYERS[to]! < LAYERS[from]!)).map((i) => `${i.from} -> ${i.to} (${i.where})`);
    expect(upward).toEqual([]);
  });
});

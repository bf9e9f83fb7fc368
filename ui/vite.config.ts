// The dashboard and the API reference pages: built into ui/dist, which the server serves under
// /ui/ (the pages themselves at /, /docs and /docs/events). Scalar's standalone bundle is copied
// into the output, so /docs works offline.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { defineConfig, type Plugin } from "vite";

const require = createRequire(import.meta.url);

/** Emits @scalar/api-reference's self-contained browser bundle as ui/dist/scalar/standalone.js. */
function scalarBundle(): Plugin {
  return {
    name: "flowgate-scalar-bundle",
    generateBundle() {
      // The package exports no path to it: it sits beside the main entry (dist/index.js).
      const file = resolve(require.resolve("@scalar/api-reference"), "../browser/standalone.js");
      this.emitFile({ type: "asset", fileName: "scalar/standalone.js", source: readFileSync(file) });
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  base: "/ui/",
  plugins: [scalarBundle()],
  build: {
    outDir: resolve(import.meta.dirname, "dist"),
    emptyOutDir: true,
    rollupOptions: {
      input: {
        index: resolve(import.meta.dirname, "index.html"),
        docs: resolve(import.meta.dirname, "docs.html"),
        events: resolve(import.meta.dirname, "events.html"),
      },
    },
  },
});

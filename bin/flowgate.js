#!/usr/bin/env -S node --max-semi-space-size=16
// The flowgate command. In a checkout, Node 24 runs the TypeScript sources itself (type
// stripping: the code keeps to erasable syntax, which tsconfig's erasableSyntaxOnly enforces), so
// no loader and no build step sits between an edit and `npm start`. An installed package runs its
// build, dist/: Node refuses to strip types under node_modules, and the package ships no src/.
// The young generation is capped at V8's small-host size: on a large host V8 grows it to 134 MB
// of mostly empty heap under steady load, with no measurable gain in throughput (bench/RESULTS.md).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(
    `flowgate needs Node 24 or later; ${process.execPath} is Node ${process.versions.node}.\n` +
      "In a checkout, npm start, npm test and npx flowgate use the Node 24 that npm install puts in node_modules/.bin.\n",
  );
  process.exit(1);
}

const sources = new URL("../src/cli/main.ts", import.meta.url);
const installed = fileURLToPath(import.meta.url).includes("/node_modules/");
await import(!installed && existsSync(sources) ? sources.href : "../dist/src/cli/main.js");

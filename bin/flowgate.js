#!/usr/bin/env -S node --max-semi-space-size=16
// The flowgate command: runs the TypeScript CLI through tsx's loader. The young generation is
// capped at V8's small-host size: on a large host V8 grows it to 134 MB of mostly empty heap
// under steady load, with no measurable gain in throughput (bench/RESULTS.md).
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");

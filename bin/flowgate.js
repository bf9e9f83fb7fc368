#!/usr/bin/env -S node --max-semi-space-size=16
// The flowgate command. Node 24 runs the TypeScript sources itself (type stripping: the code
// keeps to erasable syntax, which tsconfig's erasableSyntaxOnly enforces), so no loader sits
// between the server and V8. The young generation is capped at V8's small-host size: on a large
// host V8 grows it to 134 MB of mostly empty heap under steady load, with no measurable gain in
// throughput (bench/RESULTS.md).
await import("../src/cli/main.ts");

import { defineConfig } from "vitest/config";

/**
 * The three test projects, by the folders of test/ (`npm test` runs them all; `npm run
 * test:unit`, `test:integration`, `test:e2e` one each). test/architecture checks that every
 * folder of test/ is in one of them.
 */
export const TEST_PROJECTS = {
  /** In one process, no server, no database: pure logic and the spec's own checks. */
  unit: ["architecture", "docs", "domain", "engine", "jobs", "spec"],
  /** A real HTTP server, SQLite or PostgreSQL, real sockets, in the test's process. */
  integration: ["assets", "blobs", "client", "comfyui", "hosted", "relay", "server", "store", "surfaces"],
  /**
   * Separate processes, faults on them, packages installed, a browser, the conformance suite and the
   * bench; spec-tools: the spec's checks that run a tool in a process of its own (tsc over a copy of
   * the project, the Prism mock).
   */
  e2e: ["bench", "cli", "conformance", "faults", "packaging", "spec-tools", "ui"],
} as const;

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    projects: Object.entries(TEST_PROJECTS).map(([name, folders]) => ({
      extends: true as const,
      test: { name, include: folders.map((f) => `test/${f}/**/*.test.ts`) },
    })),
  },
});

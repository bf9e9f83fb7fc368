// Starts `npm run mock` (Prism over the spec) on a free port for a test, and stops it.
import { spawn } from "node:child_process";
import path from "node:path";
import { ROOT } from "../../generators/spec-files.ts";
import { freePort } from "../fixtures/net.ts";

/** A running mock: its base URL and how to stop it. */
export interface Mock {
  base: string;
  stop(): void;
}

/** Starts the mock and waits (60 s at most) until it answers. */
export async function startMock(): Promise<Mock> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts", "mock.ts"), "--port", String(port)], { cwd: ROOT, stdio: "ignore" });
  const mock = { base, stop: () => void child.kill("SIGTERM") };
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await fetch(`${base}/healthz`);
      return mock;
    } catch {
      if (Date.now() > deadline) {
        mock.stop();
        throw new Error("the mock did not start within 60 s");
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

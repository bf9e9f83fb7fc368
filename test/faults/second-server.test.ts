// A data directory has one owner at a time. A second `flowgate serve` on a port in use, or on a
// data directory another server holds, exits non-zero with one clear line and touches no job:
// the first server's running job keeps running and its queued job stays queued. A SIGKILLed
// owner leaves no stale lock behind.
import { afterAll, describe, expect, it } from "vitest";
import { Api, delayGraph, imageGraph } from "../server/helpers.ts";
import { exitWithin, FaultFixtures } from "./helpers.ts";

const fx = new FaultFixtures();
afterAll(() => fx.cleanup());

describe("a second server", () => {
  it("on a used port or a held data directory exits non-zero before touching any job; a SIGKILLed owner's lock is released", async () => {
    const dataDir = await fx.dataDir();
    const first = await fx.serve(["--data-dir", dataDir, "--port", "0", "--concurrency", "1"]);
    const api = new Api(first.url);
    const running = await api.submit(delayGraph(120));
    await api.waitJob(running.id, (j) => j.status === "running", "running");
    const queued = await api.submit(imageGraph("stays-queued"));
    const port = new URL(first.url).port;

    // Same port, same data directory: the case that used to recover and dispatch.
    const samePort = await exitWithin(fx.start(["serve", "--data-dir", dataDir, "--port", port]), 20_000);
    expect(samePort, "the second server must exit").not.toBe("still running");
    if (samePort === "still running") return;
    expect(samePort.code).not.toBe(0);
    expect(samePort.stdout).not.toContain("listening on");
    expect(samePort.stderr.trim().split("\n")).toHaveLength(1);
    expect(samePort.stderr).toMatch(/in use/);

    // Same port, another data directory: the listen fails, and the process still ends.
    const otherDir = await fx.dataDir();
    const portOnly = await exitWithin(fx.start(["serve", "--data-dir", otherDir, "--port", port]), 20_000);
    expect(portOnly, "the second server must exit").not.toBe("still running");
    if (portOnly === "still running") return;
    expect(portOnly.code).not.toBe(0);
    expect(portOnly.stderr.trim().split("\n")).toHaveLength(1);
    expect(portOnly.stderr).toContain(`cannot listen on 127.0.0.1:${port}: the address is already in use`);

    // Another port, same data directory: refused by the lock.
    const sameDir = await exitWithin(fx.start(["serve", "--data-dir", dataDir, "--port", "0"]), 20_000);
    expect(sameDir, "the second server must exit").not.toBe("still running");
    if (sameDir === "still running") return;
    expect(sameDir.code).not.toBe(0);
    expect(sameDir.stdout).not.toContain("listening on");
    expect(sameDir.stderr.trim().split("\n")).toHaveLength(1);
    expect(sameDir.stderr).toContain(dataDir);
    expect(sameDir.stderr).toMatch(/in use by another flowgate server/);

    // The owner's jobs were not touched.
    expect((await api.job(running.id)).status).toBe("running");
    const waiting = await api.job(queued.id);
    expect(waiting.status).toBe("queued");
    expect(waiting.queue_position).toBe(0);

    // SIGKILL releases the lock with the process: the next server takes the directory at once.
    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    const next = await fx.serve(["--data-dir", dataDir, "--port", "0", "--concurrency", "1"]);
    const again = new Api(next.url);
    expect((await again.waitTerminal(running.id)).error?.code).toBe("worker_lost");
    expect((await again.waitTerminal(queued.id)).status).toBe("succeeded");
    next.child.kill("SIGTERM");
    expect(await next.exited).toBe(0);
  });
});

// HAProxy (Debian's package) as the real load balancer in front of several API nodes: found or
// installed once, then run as a child process of the test with a generated config on a free port.
import { spawn, type ChildProcess } from "node:child_process";
import { access, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../fixtures/net.ts";

const BINARY = "/usr/sbin/haproxy";

/** Runs a command to its end; its exit code and output. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", (err) => resolve({ code: null, output: err.message }));
    child.on("close", (code) => resolve({ code, output }));
  });
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

let found: Promise<string | null> | undefined;

/**
 * Why HAProxy cannot be used here, or null when /usr/sbin/haproxy is there. When it is missing
 * and this process is root with apt-get, it installs Debian's package first (apt-get update only
 * when the plain install fails); apt's own lock serializes test files installing at once.
 */
export function haproxyUnavailable(): Promise<string | null> {
  found ??= (async () => {
    if (await exists(BINARY)) return null;
    if (process.getuid?.() !== 0) return `HAProxy is not installed (${BINARY}) and this user cannot install it (not root); apt-get install haproxy`;
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    const install = ["-o", "DPkg::Lock::Timeout=120", "install", "-y", "-q", "--no-install-recommends", "haproxy"];
    let attempt = await run("apt-get", install, env);
    if (attempt.code === null) return `HAProxy is not installed (${BINARY}) and apt-get is not available: ${attempt.output.trim()}`;
    if (attempt.code !== 0) {
      await run("apt-get", ["-o", "DPkg::Lock::Timeout=120", "update", "-q"], env);
      attempt = await run("apt-get", install, env);
    }
    if (attempt.code !== 0 || !(await exists(BINARY)))
      return `HAProxy is not installed (${BINARY}) and apt-get install haproxy failed: ${attempt.output.trim().split("\n").slice(-3).join(" | ")}`;
    return null;
  })();
  return found;
}

/** A running HAProxy: its base URL, the process, and what it printed. */
export interface LoadBalancer {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Stops HAProxy (SIGKILL is fine: it holds no state) and removes its config. */
  stop(): Promise<void>;
}

/** Name HAProxy gives the backend server at index i; each answer carries it in `x-lb-server`. */
export function serverName(i: number): string {
  return `node${i}`;
}

/**
 * The config: HTTP mode, round robin over `backends` (each request balanced on its own, keep-alive
 * or not), timeouts long enough for event streams (a keep-alive comment every 15 s) and upgraded
 * WebSockets (`timeout tunnel`), fast health checks on /healthz, and a connection refused by a
 * dead node retried on the other one (redispatch on every retry).
 */
export function haproxyConfig(port: number, backends: string[]): string {
  const servers = backends.map((origin, i) => {
    const { hostname, port: p } = new URL(origin);
    return `    server ${serverName(i)} ${hostname}:${p} check inter 200ms fall 2 rise 1`;
  });
  return [
    "global",
    "    maxconn 4096",
    "    log stdout format raw local0",
    "defaults",
    "    mode http",
    // Only failed or abnormal exchanges are logged (a 5xx, a connection cut): what a failing test shows.
    "    log global",
    "    option httplog",
    "    option dontlog-normal",
    "    timeout connect 1s",
    "    timeout client 60s",
    "    timeout server 60s",
    "    timeout tunnel 1h",
    "    timeout http-request 10s",
    "    timeout http-keep-alive 10s",
    "    timeout check 1s",
    "    timeout client-fin 1s",
    "    timeout server-fin 1s",
    "    retries 3",
    "    option redispatch 1",
    "frontend api",
    `    bind 127.0.0.1:${port}`,
    "    default_backend nodes",
    "backend nodes",
    "    balance roundrobin",
    "    option httpchk GET /healthz",
    "    http-response set-header x-lb-server %s",
    ...servers,
    "",
  ].join("\n");
}

/** Starts HAProxy in front of `backends` (origins such as http://127.0.0.1:1234), on a free port; resolves once it answers through to a node. */
export async function startLoadBalancer(backends: string[]): Promise<LoadBalancer> {
  const dir = await mkdtemp(join(tmpdir(), "fg-haproxy-"));
  let lastOutput = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const config = join(dir, "haproxy.cfg");
    await writeFile(config, haproxyConfig(port, backends));
    const child = spawn(BINARY, ["-db", "-f", config], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    const closed = new Promise<void>((r) => child.once("close", () => r()));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await closed;
      }
      await rm(dir, { recursive: true, force: true });
    };
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 10_000;
    while (child.exitCode === null && Date.now() < deadline) {
      const ok = await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return { url, child, output: () => output, stop };
      await new Promise((r) => setTimeout(r, 25));
    }
    lastOutput = output;
    if (child.exitCode === null) child.kill("SIGKILL");
    await closed;
    if (!/cannot bind|Address already in use/i.test(output)) break; // not a port race: retrying will not help
  }
  await rm(dir, { recursive: true, force: true });
  throw new Error(`HAProxy did not start:\n${lastOutput}`);
}

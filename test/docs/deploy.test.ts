// deploy/ for production (docs/production.md): the systemd units pass `systemd-analyze verify`,
// the Kubernetes manifests validate against the Kubernetes schemas (kubernetes-models), and every
// flag and variable they set is one flowgate has; the API nodes' health checks are wired to
// /healthz and /readyz, and every stop gives running jobs their --shutdown-grace. (The container
// recipe cannot be built here: no container engine; its settings are checked the same way.)
import { spawnSync } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { loadConfig, SERVE_FLAGS } from "../../src/config/config.ts";
import { read, ROOT } from "./markdown.ts";

const HAS_SYSTEMD_ANALYZE = spawnSync("systemd-analyze", ["--version"]).status === 0;
/** The default --shutdown-grace, in seconds: every stop must wait longer than this. */
const GRACE_S = 25;
const ENVS = new Set<string>(Object.values(SERVE_FLAGS).map((f) => f.env));

/** Flags of `serve`/`worker` among `args` that flowgate does not have. */
function unknownFlags(args: readonly string[]): string[] {
  return args.filter((a) => a.startsWith("--") && !Object.hasOwn(SERVE_FLAGS, a.slice(2).split("=")[0]!));
}

/** A variable the deployment sets that is neither flowgate's nor the AWS SDK's. */
function unknownVariables(names: readonly string[]): string[] {
  return names.filter((n) => !ENVS.has(n) && !/^AWS_[A-Z_]+$/.test(n));
}

describe("deploy/systemd", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "flowgate-units-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** The units, the worker template as its first instance. */
  const units = async () => (await readdir(join(ROOT, "deploy/systemd"))).filter((f) => f.endsWith(".service"));

  it.skipIf(!HAS_SYSTEMD_ANALYZE)("every unit passes systemd-analyze verify, without a warning", async () => {
    const names = await units();
    expect(names.sort()).toEqual(["flowgate-api.service", "flowgate-worker@.service"]);
    for (const name of names) {
      // This machine's node and checkout stand in for the installed ones (verify checks that ExecStart's program exists).
      const text = read(`deploy/systemd/${name}`).replaceAll("/usr/local/bin/node", process.execPath);
      const file = join(dir, name.replace("@.service", "@1.service"));
      await writeFile(file, text);
      const r = spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr.trim(), name).toBe("");
    }
  });

  it.skipIf(!HAS_SYSTEMD_ANALYZE)("would report a broken unit (the check can fail)", async () => {
    const file = join(dir, "broken.service");
    await writeFile(
      file,
      read("deploy/systemd/flowgate-api.service").replaceAll("/usr/local/bin/node", process.execPath).replace("KillSignal=SIGTERM", "KillSignal=SIGTERMX"),
    );
    expect(spawnSync("systemd-analyze", ["verify", file], { encoding: "utf8" }).stderr).toContain("SIGTERMX");
  });

  it("run flowgate with flags it has, stop after the grace, do not restart a misconfiguration, and share an environment file of known variables", async () => {
    for (const name of await units()) {
      const text = read(`deploy/systemd/${name}`);
      const exec = /^ExecStart=(.*)$/m.exec(text)![1]!.split(/\s+/);
      expect(exec.slice(1, 3), name).toEqual(["/opt/flowgate/node_modules/flowgate/bin/flowgate.js", name.startsWith("flowgate-api") ? "serve" : "worker"]);
      expect(unknownFlags(exec), name).toEqual([]);
      expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(text)?.[1]), name).toBeGreaterThan(GRACE_S);
      expect(text, name).toMatch(/^RestartPreventExitStatus=2$/m);
      expect(text, name).toMatch(/^EnvironmentFile=\/etc\/flowgate\/flowgate\.env$/m);
    }
    const variables = [...read("deploy/systemd/flowgate.env").matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!);
    expect(variables.length).toBeGreaterThan(5);
    expect(unknownVariables(variables)).toEqual([]);
  });
});

describe("deploy/kubernetes", () => {
  const docs = parseAllDocuments(read("deploy/kubernetes/flowgate.yaml")).map(
    (d) => d.toJS() as { kind: string; metadata: { name: string } } & Record<string, any>,
  );
  const byName = (kind: string, name: string) => docs.find((d) => d.kind === kind && d.metadata.name === name)!;
  const KINDS: Record<string, new (data: any) => { validate(): void }> = { Deployment, Service, Secret };

  it("every object validates against the Kubernetes schema", () => {
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      "Secret/flowgate",
      "Deployment/flowgate-api",
      "Service/flowgate-api",
      "Deployment/flowgate-worker",
    ]);
    for (const d of docs) expect(() => new KINDS[d.kind]!(d).validate(), `${d.kind}/${d.metadata.name}`).not.toThrow();
  });

  it("would reject a malformed object (the check can fail)", () => {
    const broken = structuredClone(byName("Deployment", "flowgate-api"));
    broken.spec.template.spec.containers[0].readinessProbe.httpGet.port = { name: "http" };
    expect(() => new Deployment(broken).validate()).toThrow();
  });

  it("wires the API nodes' probes to /healthz and /readyz, drains on stop, and runs flowgate with flags and variables it has", () => {
    const api = byName("Deployment", "flowgate-api").spec.template.spec;
    const container = api.containers[0];
    expect(container.livenessProbe.httpGet.path).toBe("/healthz");
    expect(container.startupProbe.httpGet.path).toBe("/healthz");
    expect(container.readinessProbe.httpGet.path).toBe("/readyz");
    expect(container.args).toEqual(["serve", "--no-dispatch"]);
    expect(api.terminationGracePeriodSeconds).toBeGreaterThan(GRACE_S + Number(container.lifecycle.preStop.exec.command[1]));
    const worker = byName("Deployment", "flowgate-worker").spec.template.spec;
    expect(worker.containers[0].args[0]).toBe("worker");
    // The image's FLOWGATE_HEALTH=1 has a worker answer /healthz on the port the probe names.
    expect(worker.containers[0].livenessProbe.httpGet.path).toBe("/healthz");
    expect(worker.containers[0].ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([8189]);
    expect(worker.terminationGracePeriodSeconds).toBeGreaterThan(GRACE_S);
    for (const args of [container.args, worker.containers[0].args]) expect(unknownFlags(args)).toEqual([]);
    const variables = [...Object.keys(byName("Secret", "flowgate").stringData), ...container.env.map((e: { name: string }) => e.name)];
    expect(unknownVariables(variables)).toEqual([]);
  });
});

describe("deploy/container/Containerfile", () => {
  const text = read("deploy/container/Containerfile");
  it("sets known variables, checks /healthz, stops with SIGTERM and starts the flowgate command", () => {
    const env = /^ENV ((?:.*\\\n)*.*)$/m.exec(text)![1]!;
    expect(unknownVariables([...env.matchAll(/([A-Z][A-Z0-9_]*)=/g)].map((m) => m[1]!))).toEqual([]);
    expect(text).toMatch(/^HEALTHCHECK .*\/healthz/m);
    // One HEALTHCHECK for both roles: a worker answers /healthz too, on FLOWGATE_PORT.
    expect(env).toMatch(/FLOWGATE_HEALTH=1/);
    expect(env).toMatch(/FLOWGATE_PORT=8189/);
    expect(text).toMatch(/^HEALTHCHECK .*127\.0\.0\.1:8189\/healthz/m);
    expect(text).toMatch(/^STOPSIGNAL SIGTERM$/m);
    expect(text).toMatch(/^ENTRYPOINT \["node", "\/opt\/flowgate\/node_modules\/flowgate\/bin\/flowgate\.js"\]$/m);
    expect(text).toMatch(/^FROM node:24-/m);
  });
});

describe("the placeholders of deploy/", () => {
  it("a signing key left as the placeholder of flowgate.env or the Secret is refused at start", () => {
    const fromEnvFile = /^FLOWGATE_SIGNING_KEY=(.*)$/m.exec(read("deploy/systemd/flowgate.env"))![1]!;
    const secret = parseAllDocuments(read("deploy/kubernetes/flowgate.yaml"))
      .map((d) => d.toJS() as { kind: string; stringData?: Record<string, string> })
      .find((d) => d.kind === "Secret")!;
    const fromSecret = secret.stringData!.FLOWGATE_SIGNING_KEY!;
    for (const key of [fromEnvFile, fromSecret]) expect(() => loadConfig(["--signing-key", key], {})).toThrow(/placeholder/);
    expect(loadConfig(["--signing-key", "0123456789abcdef0123456789abcdef"], {}).signingKey).toBe("0123456789abcdef0123456789abcdef");
  });
});

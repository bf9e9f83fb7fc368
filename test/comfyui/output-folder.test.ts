// Where a ComfyUI instance's output files are read from: its folder on this machine (configured,
// or found from what it says about itself and confirmed by a first file), else GET /view.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ComfyUIEngine } from "../../src/engine/comfyui/index.ts";
import { ComfyHttp } from "../../src/engine/comfyui/http-api.ts";
import { OutputFolder } from "../../src/engine/comfyui/output-folder.ts";
import { EmbeddedEngine } from "../../src/engine/embedded-engine.ts";
import { FakeComfyUI, type FakeOptions } from "./fake-comfyui.ts";
import { FAST, recorder, until } from "./helpers.ts";

const OBJECT_INFO = new EmbeddedEngine().nodeDefinitionsSync() as unknown as Record<string, unknown>;
const file = (filename: string, subfolder = "") => ({ filename, subfolder, type: "output" });

let root: string;
let out: string;
const cleanups: Array<() => Promise<void>> = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "flowgate-outfolder-"));
  out = join(root, "output");
  await mkdir(out);
});

afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await rm(root, { recursive: true, force: true });
});

async function fake(options: Partial<FakeOptions>): Promise<FakeComfyUI> {
  const f = await new FakeComfyUI({ objectInfo: OBJECT_INFO, ...options }).start();
  cleanups.push(() => f.stop());
  return f;
}

describe("OutputFolder, auto", () => {
  it("finds the folder an instance on this machine names with --output-directory, and reads from it once a first file confirms it", async () => {
    const f = await fake({ systemArgv: ["main.py", "--cpu", "--output-directory", out] });
    const folder = new OutputFolder("auto", new ComfyHttp(f.url));
    expect(folder.state).toBe("view");
    await folder.discover();
    expect(folder.state).toBe("candidate");
    await writeFile(join(out, "a_00001_.png"), "first");
    // Unconfirmed: nothing is read from it yet.
    expect(await folder.read(file("a_00001_.png"))).toBeNull();
    await folder.confirm(file("a_00001_.png"), Buffer.from("first"));
    expect(folder.state).toBe("folder");
    await mkdir(join(out, "sub"));
    await writeFile(join(out, "sub", "a_00002_.png"), "second");
    expect(String(await folder.read(file("a_00002_.png", "sub")))).toBe("second");
    // Not there, or not an output file: /view serves it.
    expect(await folder.read(file("a_00003_.png"))).toBeNull();
    expect(await folder.read({ filename: "a_00002_.png", subfolder: "sub", type: "temp" })).toBeNull();
  });

  it("takes --output-directory=PATH, and without it the output folder beside the instance's custom_nodes folder", async () => {
    const named = await fake({ systemArgv: ["main.py", `--output-directory=${out}`] });
    const a = new OutputFolder("auto", new ComfyHttp(named.url));
    await a.discover();
    expect(a.state).toBe("candidate");

    const defaults = await fake({
      systemArgv: ["main.py", "--cpu"],
      folderPaths: { checkpoints: [join(root, "models", "checkpoints")], custom_nodes: [join(root, "custom_nodes")] },
    });
    const b = new OutputFolder("auto", new ComfyHttp(defaults.url));
    await b.discover();
    await writeFile(join(out, "b.png"), "b");
    await b.confirm(file("b.png"), Buffer.from("b"));
    expect(b.state).toBe("folder");
    expect(String(await b.read(file("b.png")))).toBe("b");
  });

  it("stays with /view when the first file differs, when the folder is relative, missing or not named, and for an instance on another machine", async () => {
    const f = await fake({ systemArgv: ["main.py", "--output-directory", out] });
    const differs = new OutputFolder("auto", new ComfyHttp(f.url));
    await differs.discover();
    await writeFile(join(out, "c.png"), "on disk");
    // A file not there yet leaves the question open; other bytes close it.
    await differs.confirm(file("absent.png"), Buffer.from("x"));
    expect(differs.state).toBe("candidate");
    await differs.confirm(file("c.png"), Buffer.from("served"));
    expect(differs.state).toBe("view");
    expect(await differs.read(file("c.png"))).toBeNull();
    // Looked for again (the socket opened after an outage), it is a candidate again.
    await differs.discover();
    expect(differs.state).toBe("candidate");

    for (const options of [
      { systemArgv: ["main.py", "--output-directory", "output"] },
      { systemArgv: ["main.py", "--output-directory", join(root, "missing")] },
      { systemArgv: ["main.py"] },
      {},
    ]) {
      const g = await fake(options);
      const folder = new OutputFolder("auto", new ComfyHttp(g.url));
      await folder.discover();
      expect(folder.state, JSON.stringify(options)).toBe("view");
    }

    // Addressed as another machine, its paths would mean nothing here: it is not even asked.
    const address = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
    if (address) {
      const remote = await new FakeComfyUI({ objectInfo: OBJECT_INFO, systemArgv: ["main.py", "--output-directory", out] }).start(0, address);
      cleanups.push(() => remote.stop());
      const folder = new OutputFolder("auto", new ComfyHttp(remote.url));
      await folder.discover();
      expect(folder.state).toBe("view");
      expect(remote.calls("GET", "/system_stats")).toHaveLength(0);
    }

    const off = await fake({ systemArgv: ["main.py", "--output-directory", out] });
    const never = new OutputFolder("off", new ComfyHttp(off.url));
    await never.discover();
    expect(never.state).toBe("view");
    expect(off.calls("GET", "/system_stats")).toHaveLength(0);
  });
});

describe("OutputFolder, reading", () => {
  it("reads a configured folder, even one that appears after the start, and large files too", async () => {
    const later = join(root, "later");
    const folder = new OutputFolder(later, new ComfyHttp("http://127.0.0.1:1"));
    expect(await folder.read(file("x.png"))).toBeNull();
    await mkdir(later);
    const big = Buffer.alloc(300 * 1024, 7);
    await writeFile(join(later, "big.bin"), big);
    expect(folder.state).toBe("folder");
    expect((await folder.read(file("big.bin")))?.equals(big)).toBe(true);
  });

  it("refuses what is not a regular file inside it: a link, a folder linked from outside, a way out, a FIFO", async () => {
    await writeFile(join(root, "secret.txt"), "secret");
    await mkdir(join(root, "elsewhere"));
    await writeFile(join(root, "elsewhere", "s.png"), "secret");
    await symlink(join(root, "secret.txt"), join(out, "link.png"));
    await symlink(join(root, "elsewhere"), join(out, "linked"));
    await mkdir(join(out, "dir.png"));
    execFileSync("mkfifo", [join(out, "fifo.png")]);
    const folder = new OutputFolder(out, new ComfyHttp("http://127.0.0.1:1"));
    for (const f of [
      file("link.png"),
      file("s.png", "linked"),
      file("secret.txt", ".."),
      file("../secret.txt"),
      file("dir.png"),
      file("fifo.png"),
      file("", ""),
    ]) {
      expect(await folder.read(f), JSON.stringify(f)).toBeNull();
    }
    // A folder that is itself reached through a link is fine: only what lies inside it counts.
    await symlink(out, join(root, "out-link"));
    await writeFile(join(out, "ok.png"), "ok");
    expect(String(await new OutputFolder(join(root, "out-link"), new ComfyHttp("http://127.0.0.1:1")).read(file("ok.png")))).toBe("ok");
  });
});

describe("the comfyui backend, auto", () => {
  it("fetches the first output with /view, then reads the next ones from the folder an instance on this machine names", async () => {
    const f = await fake({ systemArgv: ["main.py", "--output-directory", out] });
    const engine = new ComfyUIEngine({ ...FAST, urls: [f.url] });
    cleanups.push(() => engine.close());
    await until(() => (f.calls("GET", "/system_stats").length > 0 ? true : undefined), "the instance asked where its outputs are");
    await new Promise((r) => setTimeout(r, 100));
    const graph = {
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "auto" } },
    };
    const run = async (name: string, onDisk: string, served: string) => {
      await writeFile(join(out, name), onDisk);
      f.files.set(`output//${name}`, { bytes: Buffer.from(served), contentType: "image/png" });
      const rec = recorder();
      const result = engine.execute(graph, rec.options);
      const { prompt_id: id } = await f.nextPrompt();
      f.startRunning(id);
      f.send("execution_start", { prompt_id: id });
      f.send("executing", { node: "2", prompt_id: id });
      f.send("executed", { node: "2", output: { images: [file(name)] }, prompt_id: id });
      f.finish(id, { outputs: { "2": { images: [file(name)] } }, status: { status_str: "success", completed: true, messages: [] } });
      f.send("execution_success", { prompt_id: id });
      await result;
      return String(rec.outputs[0]!.data);
    };
    expect(await run("auto_00001_.png", "same", "same")).toBe("same");
    expect(engine.upstreams()[0]!.outputFolder).toBe(true);
    // The folder is trusted now: what /view would serve no longer matters.
    expect(await run("auto_00002_.png", "from the folder", "from /view")).toBe("from the folder");
    expect(f.calls("GET", "/view").map((c) => c.query.get("filename"))).toEqual(["auto_00001_.png"]);
  });
});

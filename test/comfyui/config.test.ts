// `--engine` and `--comfyui-url` (FLOWGATE_ENGINE, FLOWGATE_COMFYUI_URL) and the engine serve builds from them.
import { describe, expect, it } from "vitest";
import { ComfyUIEngine } from "../../src/engine/comfyui/index.ts";
import { describeConfig, loadConfig } from "../../src/config/config.ts";
import { createEngine } from "../../src/cli/create-engine.ts";

describe("engine settings", () => {
  it("defaults to the embedded engine and ignores ComfyUI URLs then", () => {
    const c = loadConfig([], { FLOWGATE_COMFYUI_URL: "not a url" });
    expect(c.engine).toBe("embedded");
    expect(c.comfyuiUrls).toEqual([]);
    expect(createEngine(c).kind).toBe("embedded");
  });

  it("takes a repeated --comfyui-url, or a comma-separated FLOWGATE_COMFYUI_URL; the flags win", () => {
    const flags = loadConfig(["--engine", "comfyui", "--comfyui-url", "http://127.0.0.1:8188/", "--comfyui-url", "http://gpu2:8188"], {
      FLOWGATE_COMFYUI_URL: "http://ignored:1",
    });
    expect(flags.comfyuiUrls).toEqual(["http://127.0.0.1:8188", "http://gpu2:8188"]);
    const env = loadConfig([], { FLOWGATE_ENGINE: "comfyui", FLOWGATE_COMFYUI_URL: "http://a:8188, http://b:8188" });
    expect(env.engine).toBe("comfyui");
    expect(env.comfyuiUrls).toEqual(["http://a:8188", "http://b:8188"]);
  });

  it("takes ComfyUI's output folder once for all instances or once per URL, only with --engine comfyui", () => {
    const urls = ["--engine", "comfyui", "--comfyui-url", "http://a:8188", "--comfyui-url", "http://b:8188"];
    expect(loadConfig([...urls, "--comfyui-output-dir", "/srv/comfy/output"], {}).comfyuiOutputDirs).toEqual(["/srv/comfy/output"]);
    expect(loadConfig(urls, { FLOWGATE_COMFYUI_OUTPUT_DIR: "/a/output, /b/output" }).comfyuiOutputDirs).toEqual(["/a/output", "/b/output"]);
    expect(loadConfig(urls, {}).comfyuiOutputDirs).toEqual([]);
    expect(loadConfig([...urls, "--comfyui-output-dir", "off", "--comfyui-output-dir", "auto"], {}).comfyuiOutputDirs).toEqual(["off", "auto"]);
    expect(() => loadConfig([...urls, "--comfyui-output-dir", "/a", "--comfyui-output-dir", "/b", "--comfyui-output-dir", "/c"], {})).toThrow(
      /one per --comfyui-url \(2\), got 3/,
    );
    expect(() => loadConfig(["--comfyui-output-dir", "/a"], {})).toThrow(/--engine comfyui/);
    expect(loadConfig([], { FLOWGATE_COMFYUI_OUTPUT_DIR: "/a" }).comfyuiOutputDirs).toEqual([]);
    expect(() => new ComfyUIEngine({ urls: ["http://a:1", "http://b:1"], outputDirs: ["/a", "/b", "/c"] })).toThrow(/one per instance/);
    expect(JSON.stringify(describeConfig(loadConfig([...urls, "--comfyui-output-dir", "/srv/out"], {})))).toContain("/srv/out");
  });

  it("refuses an unknown engine, comfyui without a URL, and a URL that is not http(s)", () => {
    expect(() => loadConfig(["--engine", "gpu"], {})).toThrow(/--engine/);
    expect(() => loadConfig(["--engine", "comfyui"], {})).toThrow(/--comfyui-url/);
    expect(() => loadConfig(["--engine", "comfyui", "--comfyui-url", "ftp://x"], {})).toThrow(/http/);
  });

  it("prints the URLs without credentials, and serve builds the comfyui engine over them", async () => {
    const c = loadConfig(["--engine", "comfyui", "--comfyui-url", "http://user:secret@127.0.0.1:9"], {});
    const printed = JSON.stringify(describeConfig(c));
    expect(printed).toContain("127.0.0.1:9");
    expect(printed).not.toContain("secret");
    const engine = createEngine(c);
    try {
      expect(engine).toBeInstanceOf(ComfyUIEngine);
      expect((engine as ComfyUIEngine).urls).toEqual(["http://127.0.0.1:9"]);
    } finally {
      await engine.close?.();
    }
  });
});

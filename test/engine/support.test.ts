// Python-compatible conversions, file naming and error sanitising.
import { describe, expect, it } from "vitest";
import { NodeInputError, sanitizeTraceback } from "../../src/engine/index.ts";
import { redact, stripPaths, toJobError } from "../../src/engine/errors.ts";
import { expandPrefixVariables, FileNamer, splitPrefix } from "../../src/engine/filenames.ts";
import type { NodeFile } from "../../src/engine/node-spec.ts";
import { pyBool, pyFloat, pyFloatRepr, pyInt, pyRepr, pyStr } from "../../src/engine/python.ts";

describe("Python conversions", () => {
  it("int() truncates floats, parses decimal strings, refuses the rest with Python's message", () => {
    expect(pyInt(3.9)).toEqual({ ok: true, value: 3 });
    expect(pyInt(-3.9)).toEqual({ ok: true, value: -3 });
    expect(pyInt(" 1_000 ")).toEqual({ ok: true, value: 1000 });
    expect(pyInt(true)).toEqual({ ok: true, value: 1 });
    expect(pyInt("1.5")).toEqual({ ok: false, error: "invalid literal for int() with base 10: '1.5'" });
    expect(pyInt(null)).toEqual({ ok: false, error: "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'" });
  });

  it("float() parses Python float literals", () => {
    expect(pyFloat("1e-3")).toEqual({ ok: true, value: 0.001 });
    expect(pyFloat(".5")).toEqual({ ok: true, value: 0.5 });
    expect(pyFloat("-inf")).toEqual({ ok: true, value: -Infinity });
    expect(pyFloat("e5").ok).toBe(false);
    expect(pyFloat("abc")).toEqual({ ok: false, error: "could not convert string to float: 'abc'" });
  });

  it("bool() is truthiness, so 'false' is True as in ComfyUI", () => {
    expect([pyBool("false"), pyBool(""), pyBool(0), pyBool(2), pyBool(null), pyBool({})]).toEqual([true, false, false, true, false, false]);
  });

  it("str() and repr() read as Python's", () => {
    expect(pyStr(5)).toBe("5");
    expect(pyStr(true)).toBe("True");
    expect(pyStr(null)).toBe("None");
    expect(pyRepr(["a", 1, { k: "it's" }])).toBe(`['a', 1, {'k': "it's"}]`);
    expect([pyFloatRepr(1), pyFloatRepr(0.1), pyFloatRepr(1e16), pyFloatRepr(1e-5), pyFloatRepr(123.5)]).toEqual(["1.0", "0.1", "1e+16", "1e-05", "123.5"]);
  });
});

describe("file names", () => {
  const file = (prefix: string, extra: Partial<NodeFile> = {}): NodeFile => ({
    prefix,
    extension: "png",
    type: "image",
    content_type: "image/png",
    data: Buffer.alloc(0),
    folder: "output",
    ...extra,
  });

  it("splits the prefix into subfolder and name, normalising . and ..", () => {
    expect(splitPrefix("ComfyUI")).toEqual({ subfolder: "", filename: "ComfyUI" });
    expect(splitPrefix("audio/ComfyUI")).toEqual({ subfolder: "audio", filename: "ComfyUI" });
    expect(splitPrefix("a/./b/../c")).toEqual({ subfolder: "a", filename: "c" });
    expect(splitPrefix("dir/")).toEqual({ subfolder: "dir", filename: "" });
  });

  it("refuses prefixes that leave the output folder", () => {
    for (const bad of ["../x", "/etc/passwd", "a/../../x", "a\\b", "a\nb"]) expect(() => splitPrefix(bad)).toThrow(NodeInputError);
  });

  it("counts per folder and prefix, and expands ComfyUI's variables", () => {
    const namer = new FileNamer(() => new Date("2026-03-04T05:06:07Z"));
    expect(namer.allocate(file("x"))).toEqual({ name: "x_00001_.png", subfolder: "" });
    expect(namer.allocate(file("x"))).toEqual({ name: "x_00002_.png", subfolder: "" });
    expect(namer.allocate(file("x", { folder: "temp" }))).toEqual({ name: "x_00001_.png", subfolder: "" });
    expect(namer.allocate(file("run_%batch_num%", { batchIndex: 3 }))).toEqual({ name: "run_3_00001_.png", subfolder: "" });
    expect(expandPrefixVariables("%year%-%month%-%day%/%width%x%height%", { width: 64, height: 32 }, new Date("2026-03-04T05:06:07Z"))).toBe(
      "2026-03-04/64x32",
    );
  });
});

describe("error sanitising", () => {
  it("keeps the call chain of a traceback but no source location at all", () => {
    const stack = [
      "Error: failed at /srv/app/data/x.png",
      "    at run (/home/ci/flowgate/src/engine/nodes/image.ts:10:5)",
      "    at file:///home/ci/flowgate/src/engine/executor.ts:20:7",
      "    at C:\\Users\\ci\\flowgate\\x.ts:1:1",
      "    at node:internal/process/task_queues:95:5",
    ].join("\n");
    const clean = sanitizeTraceback(stack, []);
    expect(clean.split("\n")).toEqual(["Error: failed at x.png", "    at run", "    at <anonymous>", "    at <anonymous>"]);
    expect(clean).not.toMatch(/\/srv|\/home|file:|C:\\|\.ts|node:/);
    expect(stripPaths("see /tmp/a/b.txt")).toBe("see b.txt");
  });

  it("replaces secrets wherever they appear", () => {
    expect(redact("key=abcd1234 and abcd1234", ["abcd1234"])).toBe("key=[redacted] and [redacted]");
    const job = toJobError(new Error("bad token sk-123456"), { node_id: "1", class_type: "X" }, ["sk-123456"]);
    expect(job.message).toBe("bad token [redacted]");
    expect(job.traceback).not.toContain("sk-123456");
  });
});

// `--input NAME=PATH`: NODE.INPUT or NODE, NODE an id or a unique _meta.title.
import { describe, expect, it } from "vitest";
import { parseInputFlag, resolveInputTarget, setInput } from "../../src/cli/graph-inputs.ts";

const graph = {
  "1": { class_type: "LoadImage", inputs: { image: "" }, _meta: { title: "photo" } },
  "2": { class_type: "LoadImage", inputs: { image: "" }, _meta: { title: "twin" } },
  "3": { class_type: "LoadImage", inputs: { image: "" }, _meta: { title: "twin" } },
  "4": { class_type: "ImageBlend", inputs: { image1: ["1", 0], image2: ["2", 0], blend_factor: 0.5 }, _meta: { title: "mix.v2" } },
  "5": { class_type: "SaveImage", inputs: { images: ["4", 0], filename_prefix: "x" } },
};

describe("--input NAME=PATH", () => {
  it("splits at the first =, so paths may hold more", () => {
    expect(parseInputFlag("photo=a=b.png")).toEqual({ name: "photo", path: "a=b.png" });
    expect(() => parseInputFlag("photo")).toThrow();
    expect(() => parseInputFlag("=x.png")).toThrow();
    expect(() => parseInputFlag("photo=")).toThrow();
  });

  it("a node id or title alone addresses its file input", () => {
    expect(resolveInputTarget(graph, "1")).toEqual({ nodeId: "1", input: "image" });
    expect(resolveInputTarget(graph, "photo")).toEqual({ nodeId: "1", input: "image" });
  });

  it("NODE.INPUT addresses a named input, the node by id or title (titles may hold dots)", () => {
    expect(resolveInputTarget(graph, "4.blend_factor")).toEqual({ nodeId: "4", input: "blend_factor" });
    expect(resolveInputTarget(graph, "mix.v2.image1")).toEqual({ nodeId: "4", input: "image1" });
    expect(resolveInputTarget(graph, "photo.image")).toEqual({ nodeId: "1", input: "image" });
  });

  it("refuses ambiguous titles, nodes without one file input, unknown inputs and unknown names", () => {
    expect(() => resolveInputTarget(graph, "twin")).toThrow(/shared by nodes 2, 3/);
    expect(() => resolveInputTarget(graph, "4")).toThrow(/no file input/);
    expect(() => resolveInputTarget(graph, "1.mask")).toThrow(/no input "mask"/);
    expect(() => resolveInputTarget(graph, "nosuch")).toThrow(/neither a node id/);
  });

  it("setInput replaces one input and leaves the graph given untouched", () => {
    const ref = { __type: "core/ASSET", info: { id: "a" } };
    const next = setInput(graph, { nodeId: "1", input: "image" }, ref) as typeof graph;
    expect(next["1"].inputs.image).toEqual(ref);
    expect(next["1"]._meta.title).toBe("photo");
    expect(graph["1"].inputs.image).toBe("");
  });
});

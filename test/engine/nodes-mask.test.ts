import { describe, expect, it } from "vitest";
import { NodeInputError } from "../../src/engine/index.ts";
import { makeImage, makeMask, type ImageTensor, type MaskTensor } from "../../src/engine/media/tensors.ts";
import { ImageCompositeMasked, ImageToMask, InvertMask, LoadImageMask, MaskToImage, SolidMask } from "../../src/engine/nodes/mask.ts";
import { imageOf, pixel, pngOf, runNode } from "./helpers.ts";

const only = async <T>(def: Parameters<typeof runNode>[0], inputs: Record<string, unknown>) => (await runNode(def, inputs)).result![0] as T;
const file = (bytes: Buffer) => ({ source: "upload", name: "m.png", bytes, hash: "h" });

describe("mask nodes", () => {
  it("SolidMask is 1 x height x width of one value", async () => {
    const m = await only<MaskTensor>(SolidMask, { value: 0.25, width: 3, height: 2 });
    expect([m.batch, m.height, m.width]).toEqual([1, 2, 3]);
    expect(Array.from(m.data)).toEqual([0.25, 0.25, 0.25, 0.25, 0.25, 0.25]);
  });

  it("InvertMask is 1 - mask", async () => {
    const m = await only<MaskTensor>(InvertMask, { mask: makeMask(1, 1, 2, Float32Array.from([0, 0.25])) });
    expect(Array.from(m.data)).toEqual([1, 0.75]);
  });

  it("MaskToImage copies the mask into R, G and B", async () => {
    const img = await only<ImageTensor>(MaskToImage, { mask: makeMask(2, 1, 1, Float32Array.from([0.5, 1])) });
    expect([img.batch, img.height, img.width]).toEqual([2, 1, 1]);
    expect(pixel(img, 0, 0, 0)).toEqual([0.5, 0.5, 0.5]);
    expect(pixel(img, 0, 0, 1)).toEqual([1, 1, 1]);
  });

  it("ImageToMask takes one channel; alpha of an RGB image is invalid input", async () => {
    const img = imageOf([[[0.1, 0.2, 0.3]]]);
    expect(Array.from((await only<MaskTensor>(ImageToMask, { image: img, channel: "green" })).data)).toEqual([Math.fround(0.2)]);
    expect(Array.from((await only<MaskTensor>(ImageToMask, { image: img, channel: "blue" })).data)).toEqual([Math.fround(0.3)]);
    await expect(runNode(ImageToMask, { image: img, channel: "alpha" })).rejects.toBeInstanceOf(NodeInputError);
  });

  it("LoadImageMask: alpha is inverted, color channels are taken as is, no alpha gives zeros", async () => {
    const rgba = await pngOf(2, 1, 4, [255, 0, 0, 255, 0, 128, 0, 0]);
    expect(Array.from((await only<MaskTensor>(LoadImageMask, { image: file(rgba), channel: "alpha" })).data)).toEqual([0, 1]);
    expect(Array.from((await only<MaskTensor>(LoadImageMask, { image: file(rgba), channel: "red" })).data)).toEqual([1, 0]);
    const rgb = await pngOf(2, 2, 3, new Array(12).fill(200));
    const m = await only<MaskTensor>(LoadImageMask, { image: file(rgb), channel: "alpha" });
    expect([m.batch, m.height, m.width]).toEqual([1, 2, 2]);
    expect(m.data.every((v) => v === 0)).toBe(true);
  });
});

describe("ImageCompositeMasked", () => {
  const black = () => makeImage(1, 4, 4);
  const white = (w: number, h: number) => {
    const i = makeImage(1, h, w);
    i.data.fill(1);
    return i;
  };
  const lit = (img: ImageTensor) => Array.from({ length: img.height }, (_, y) => Array.from({ length: img.width }, (_, x) => +pixel(img, x, y)[0].toFixed(3)));

  it("pastes the source at (x, y), clipped at the destination's edges", async () => {
    const out = await only<ImageTensor>(ImageCompositeMasked, { destination: black(), source: white(2, 2), x: 3, y: 1, resize_source: false });
    expect(lit(out)).toEqual([
      [0, 0, 0, 0],
      [0, 0, 0, 1],
      [0, 0, 0, 1],
      [0, 0, 0, 0],
    ]);
  });

  it("blends through the mask, resized to the source", async () => {
    const mask = makeMask(1, 1, 1, Float32Array.from([0.5]));
    const out = await only<ImageTensor>(ImageCompositeMasked, { destination: black(), source: white(2, 2), x: 0, y: 0, resize_source: false, mask });
    expect(lit(out)[0]).toEqual([0.5, 0.5, 0, 0]);
    expect(lit(out)[1]).toEqual([0.5, 0.5, 0, 0]);
  });

  it("resize_source stretches the source to the destination's size before pasting", async () => {
    const full = await only<ImageTensor>(ImageCompositeMasked, { destination: black(), source: white(1, 1), x: 0, y: 0, resize_source: true });
    expect(
      lit(full)
        .flat()
        .every((v) => v === 1),
    ).toBe(true);
    const shifted = await only<ImageTensor>(ImageCompositeMasked, { destination: black(), source: white(1, 1), x: 2, y: 2, resize_source: true });
    expect(lit(shifted)).toEqual([
      [0, 0, 0, 0],
      [0, 0, 0, 0],
      [0, 0, 1, 1],
      [0, 0, 1, 1],
    ]);
  });

  it("repeats a single source over a destination batch", async () => {
    const dest = makeImage(2, 1, 1);
    const out = await only<ImageTensor>(ImageCompositeMasked, { destination: dest, source: white(1, 1), x: 0, y: 0, resize_source: false });
    expect([pixel(out, 0, 0, 0)[0], pixel(out, 0, 0, 1)[0]]).toEqual([1, 1]);
  });
});

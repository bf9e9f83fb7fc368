import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { NodeInputError } from "../../src/engine/index.ts";
import type { ImageTensor, MaskTensor } from "../../src/engine/media/tensors.ts";
import { makeImage } from "../../src/engine/media/tensors.ts";
import { ImageBlend, ImageBlur, ImageSharpen } from "../../src/engine/nodes/image-filter.ts";
import { ImageCrop, ImageFlip, ImageRotate, ImageScale, ImageScaleBy } from "../../src/engine/nodes/image-transform.ts";
import { EmptyImage, ImageBatch, ImageInvert, LoadImage, PreviewImage, SaveImage } from "../../src/engine/nodes/image.ts";
import { imageOf, pixel, pngOf, rawPixels, runNode } from "./helpers.ts";

const file = (bytes: Buffer, name = "in.png") => ({ source: "upload", name, bytes, hash: "h" });
const first = async (def: Parameters<typeof runNode>[0], inputs: Record<string, unknown>) => (await runNode(def, inputs)).result![0] as ImageTensor;

/** 1-d row image from gray values. */
const row = (...values: number[]) => imageOf([values.map((v) => [v, v, v] as [number, number, number])]);
const grays = (image: ImageTensor) => Array.from({ length: image.width * image.height }, (_, i) => image.data[i * 3]!);

describe("LoadImage", () => {
  it("decodes RGB and gives MASK = 1 - alpha", async () => {
    const png = await pngOf(2, 1, 4, [255, 0, 0, 255, 0, 0, 255, 0]);
    const [image, mask] = (await runNode(LoadImage, { image: file(png) })).result as [ImageTensor, MaskTensor];
    expect([image.batch, image.height, image.width]).toEqual([1, 1, 2]);
    expect(pixel(image, 0, 0)).toEqual([1, 0, 0]);
    expect(pixel(image, 1, 0)).toEqual([0, 0, 1]);
    expect([mask.batch, mask.height, mask.width]).toEqual([1, 1, 2]);
    expect(Array.from(mask.data)).toEqual([0, 1]);
  });

  it("gives a 64x64 zero mask when the file has no alpha", async () => {
    const png = await pngOf(3, 2, 3, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160, 170, 180]);
    const [image, mask] = (await runNode(LoadImage, { image: file(png) })).result as [ImageTensor, MaskTensor];
    expect(pixel(image, 2, 1).map((v) => Math.round(v * 255))).toEqual([160, 170, 180]);
    expect([mask.batch, mask.height, mask.width]).toEqual([1, 64, 64]);
    expect(mask.data.every((v) => v === 0)).toBe(true);
  });

  it("loads every frame of an animation as a batch", async () => {
    const frames = Buffer.from([255, 0, 0, 0, 255, 0]); // two 1x1 frames: red, green
    const webp = await sharp(frames, { raw: { width: 1, height: 2, channels: 3, pageHeight: 1 } })
      .webp({ lossless: true, delay: [100, 100] })
      .toBuffer();
    const image = await first(LoadImage, { image: file(webp, "anim.webp") });
    expect(image.batch).toBe(2);
    expect(pixel(image, 0, 0, 0)).toEqual([1, 0, 0]);
    expect(pixel(image, 0, 0, 1)).toEqual([0, 1, 0]);
  });

  it("rejects bytes that are not an image as invalid input", async () => {
    await expect(runNode(LoadImage, { image: file(Buffer.from("hello"), "x.png") })).rejects.toBeInstanceOf(NodeInputError);
  });
});

describe("SaveImage and PreviewImage", () => {
  it("write PNGs whose pixels are clip(255 * x) truncated, one per batch item", async () => {
    const image = makeImage(2, 1, 2, Float32Array.from([0, 0.5, 1, 0.999, 0.2, 1.7, -1, 0.25, 0.75, 1, 1, 1]));
    const { files } = await runNode(SaveImage, { images: image, filename_prefix: "out/pic" });
    expect(files).toHaveLength(2);
    expect(files![0]).toMatchObject({ prefix: "out/pic", extension: "png", type: "image", content_type: "image/png", folder: "output", uiKey: "images" });
    const decoded = await rawPixels(files![0]!.data);
    expect([decoded.width, decoded.height, decoded.channels]).toEqual([2, 1, 3]);
    expect([...decoded.data]).toEqual([0, 127, 255, 254, 51, 255]);
    expect([...(await rawPixels(files![1]!.data)).data]).toEqual([0, 63, 191, 255, 255, 255]);
  });

  it("PreviewImage writes temp files with ComfyUI's _temp_ prefix", async () => {
    const { files } = await runNode(PreviewImage, { images: row(0.5) });
    expect(files![0]!.folder).toBe("temp");
    expect(files![0]!.prefix).toMatch(/^ComfyUI_temp_[a-z]{5}$/);
  });
});

describe("EmptyImage, ImageInvert, ImageBatch", () => {
  it("EmptyImage fills with the 0xRRGGBB color", async () => {
    const image = await first(EmptyImage, { width: 3, height: 2, batch_size: 2, color: 0x3366ff });
    expect([image.batch, image.height, image.width]).toEqual([2, 2, 3]);
    expect(pixel(image, 2, 1, 1)).toEqual([0x33 / 255, 0x66 / 255, 1].map(Math.fround));
  });

  it("ImageInvert is 1 - x", async () => {
    const image = await first(ImageInvert, { image: row(0, 0.25, 1) });
    expect(grays(image)).toEqual([1, 0.75, 0]);
  });

  it("ImageBatch appends image2, resized to image1's size when they differ", async () => {
    const a = row(0.1, 0.2);
    const b = row(0.3, 0.3, 0.3, 0.3);
    const out = await first(ImageBatch, { image1: a, image2: b });
    expect([out.batch, out.height, out.width]).toEqual([2, 1, 2]);
    expect(pixel(out, 1, 0, 0)[0]).toBeCloseTo(0.2);
    expect(pixel(out, 0, 0, 1)[0]).toBeCloseTo(0.3);
  });
});

describe("ImageScale and ImageScaleBy (torch interpolate semantics)", () => {
  it("bilinear upscale matches align_corners=False", async () => {
    const out = await first(ImageScale, { image: row(0, 1), upscale_method: "bilinear", width: 4, height: 1, crop: "disabled" });
    expect(grays(out)).toEqual([0, 0.25, 0.75, 1]);
  });

  it("bicubic upscale uses A = -0.75 and overshoots as torch does", async () => {
    const out = await first(ImageScale, { image: row(0, 1), upscale_method: "bicubic", width: 4, height: 1, crop: "disabled" });
    const expected = [-0.10546875, 0.2265625, 0.7734375, 1.10546875];
    for (const [i, v] of grays(out).entries()) expect(v).toBeCloseTo(expected[i]!, 6);
  });

  it("nearest-exact and area", async () => {
    const near = await first(ImageScale, { image: row(0, 1), upscale_method: "nearest-exact", width: 4, height: 1, crop: "disabled" });
    expect(grays(near)).toEqual([0, 0, 1, 1]);
    const area = await first(ImageScale, { image: row(0, 0.5, 1, 0.5), upscale_method: "area", width: 2, height: 1, crop: "disabled" });
    expect(grays(area)).toEqual([0.25, 0.75]);
  });

  it("lanczos goes through sharp and keeps flat colors", async () => {
    const out = await first(ImageScale, { image: row(0.4, 0.4, 0.4), upscale_method: "lanczos", width: 6, height: 2, crop: "disabled" });
    expect([out.width, out.height]).toEqual([6, 2]);
    for (const v of out.data) expect(v).toBeCloseTo(102 / 255, 5);
  });

  it("a 0 side keeps the aspect ratio; 0 x 0 passes the image through", async () => {
    const src = makeImage(1, 2, 4);
    const out = await first(ImageScale, { image: src, upscale_method: "nearest-exact", width: 8, height: 0, crop: "disabled" });
    expect([out.width, out.height]).toEqual([8, 4]);
    expect(await first(ImageScale, { image: src, upscale_method: "area", width: 0, height: 0, crop: "disabled" })).toBe(src);
  });

  it("crop=center cuts the sides to the target aspect before resizing", async () => {
    // 4x1 (aspect 4) -> 2x1 (aspect 2): keep the middle two columns.
    const out = await first(ImageScale, { image: row(0, 0.2, 0.4, 0.6), upscale_method: "nearest-exact", width: 2, height: 1, crop: "center" });
    expect(grays(out).map((v) => +v.toFixed(3))).toEqual([0.2, 0.4]);
    // 6x1 -> 2x1: x = round((6 - 6 * 2/6) / 2) = 2 columns cut on each side.
    const wide = await first(ImageScale, { image: row(0, 0.1, 0.2, 0.3, 0.4, 0.5), upscale_method: "nearest-exact", width: 2, height: 1, crop: "center" });
    expect(grays(wide).map((v) => +v.toFixed(3))).toEqual([0.2, 0.3]);
  });

  it("ImageScaleBy rounds half to even like Python (3 x 1.5 = 4.5 -> 4)", async () => {
    const out = await first(ImageScaleBy, { image: makeImage(1, 3, 3), upscale_method: "bilinear", scale_by: 1.5 });
    expect([out.width, out.height]).toEqual([4, 4]);
  });
});

describe("ImageCrop, ImageFlip, ImageRotate", () => {
  // 3 wide x 2 high, gray values a..f by position.
  const grid = () =>
    imageOf([
      [
        [0.1, 0.1, 0.1],
        [0.2, 0.2, 0.2],
        [0.3, 0.3, 0.3],
      ],
      [
        [0.4, 0.4, 0.4],
        [0.5, 0.5, 0.5],
        [0.6, 0.6, 0.6],
      ],
    ]);
  const matrix = (img: ImageTensor) =>
    Array.from({ length: img.height }, (_, y) => Array.from({ length: img.width }, (_, x) => +pixel(img, x, y)[0].toFixed(2)));

  it("ImageCrop takes the window and clamps it into the image", async () => {
    expect(matrix(await first(ImageCrop, { image: grid(), width: 2, height: 1, x: 1, y: 1 }))).toEqual([[0.5, 0.6]]);
    expect(matrix(await first(ImageCrop, { image: grid(), width: 5, height: 5, x: 9, y: 0 }))).toEqual([[0.3], [0.6]]);
  });

  it("ImageFlip x-axis mirrors rows, y-axis mirrors columns", async () => {
    expect(matrix(await first(ImageFlip, { image: grid(), flip_method: "x-axis: vertically" }))).toEqual([
      [0.4, 0.5, 0.6],
      [0.1, 0.2, 0.3],
    ]);
    expect(matrix(await first(ImageFlip, { image: grid(), flip_method: "y-axis: horizontally" }))).toEqual([
      [0.3, 0.2, 0.1],
      [0.6, 0.5, 0.4],
    ]);
  });

  it("ImageRotate turns clockwise", async () => {
    expect(matrix(await first(ImageRotate, { image: grid(), rotation: "90 degrees" }))).toEqual([
      [0.4, 0.1],
      [0.5, 0.2],
      [0.6, 0.3],
    ]);
    expect(matrix(await first(ImageRotate, { image: grid(), rotation: "180 degrees" }))).toEqual([
      [0.6, 0.5, 0.4],
      [0.3, 0.2, 0.1],
    ]);
    expect(matrix(await first(ImageRotate, { image: grid(), rotation: "270 degrees" }))).toEqual([
      [0.3, 0.6],
      [0.2, 0.5],
      [0.1, 0.4],
    ]);
    expect(matrix(await first(ImageRotate, { image: grid(), rotation: "none" }))).toEqual(matrix(grid()));
  });
});

describe("ImageBlur and ImageSharpen (ComfyUI kernels)", () => {
  const impulse = (size: number, background = 0, center = 1) => {
    const img = makeImage(1, size, size);
    img.data.fill(background);
    const c = Math.floor(size / 2);
    img.data.fill(center, (c * size + c) * 3, (c * size + c) * 3 + 3);
    return img;
  };
  // ComfyUI samples its Gaussian on linspace(-1, 1, 2r+1), not in pixels.
  const taps = (r: number, sigma: number) => {
    const xs = Array.from({ length: 2 * r + 1 }, (_, i) => -1 + (2 * i) / (2 * r));
    const w = xs.map((x) => Math.exp(-(x * x) / (2 * sigma * sigma)));
    const s = w.reduce((a, b) => a + b, 0);
    return w.map((v) => v / s);
  };

  it("blur of an impulse is the outer product of the kernel taps (radius 2)", async () => {
    const t = taps(2, 1);
    const out = await first(ImageBlur, { image: impulse(9), blur_radius: 2, sigma: 1 });
    expect(pixel(out, 4, 4)[0]).toBeCloseTo(t[2]! * t[2]!, 6);
    expect(pixel(out, 5, 4)[0]).toBeCloseTo(t[3]! * t[2]!, 6);
    expect(pixel(out, 6, 6)[0]).toBeCloseTo(t[4]! * t[4]!, 6);
    expect(pixel(out, 7, 4)[0]).toBe(0);
  });

  it("blur pads by reflection at the edges", async () => {
    const t = taps(1, 1);
    const out = await first(ImageBlur, { image: impulse(3), blur_radius: 1, sigma: 1 });
    // The corner sees the centre twice per axis through the mirrored border.
    expect(pixel(out, 0, 0)[0]).toBeCloseTo(2 * t[0]! * 2 * t[0]!, 6);
  });

  it("sharpen raises contrast as (1 + 10a) I - 10a (G * I), clamped", async () => {
    const t = taps(1, 1);
    const out = await first(ImageSharpen, { image: impulse(5, 0.5, 0.6), sharpen_radius: 1, sigma: 1, alpha: 0.1 });
    const blurredCenter = 0.5 + 0.1 * t[1]! * t[1]!;
    expect(pixel(out, 2, 2)[0]).toBeCloseTo(2 * 0.6 - blurredCenter, 6);
    const flat = await first(ImageSharpen, { image: impulse(5, 0.3, 0.3), sharpen_radius: 2, sigma: 1, alpha: 1 });
    for (const v of flat.data) expect(v).toBeCloseTo(0.3, 6);
    const bright = await first(ImageSharpen, { image: impulse(5, 0, 1), sharpen_radius: 1, sigma: 1, alpha: 1 });
    expect(pixel(bright, 2, 2)[0]).toBe(1);
    expect(pixel(bright, 1, 2)[0]).toBe(0);
  });
});

describe("ImageBlend", () => {
  const blend = async (mode: string, factor = 1) =>
    pixel(await first(ImageBlend, { image1: row(0.25), image2: row(0.75), blend_factor: factor, blend_mode: mode }), 0, 0)[0];

  it("implements every mode of ComfyUI", async () => {
    expect(await blend("normal")).toBeCloseTo(0.75);
    expect(await blend("multiply")).toBeCloseTo(0.1875);
    expect(await blend("screen")).toBeCloseTo(0.8125);
    expect(await blend("overlay")).toBeCloseTo(0.375);
    expect(await blend("soft_light")).toBeCloseTo(0.375);
    expect(await blend("difference")).toBe(0); // -0.5 clamped
    expect(await blend("normal", 0.5)).toBeCloseTo(0.5);
  });

  it("resizes image2 to image1 and rejects batches that cannot broadcast", async () => {
    const out = await first(ImageBlend, { image1: row(0, 0), image2: row(1, 1, 1, 1), blend_factor: 1, blend_mode: "normal" });
    expect(grays(out).map((v) => +v.toFixed(4))).toEqual([1, 1]);
    await expect(runNode(ImageBlend, { image1: makeImage(2, 1, 1), image2: makeImage(3, 1, 1), blend_factor: 1, blend_mode: "normal" })).rejects.toBeInstanceOf(
      NodeInputError,
    );
  });
});

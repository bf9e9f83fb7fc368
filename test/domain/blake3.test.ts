import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { blake3 as referenceBlake3 } from "hash-wasm";
import { blake3Backend, blake3Hex, blake3HexOfStream, createBlake3Hasher, isBlake3Hex, parseBlake3Hash, toBlake3Hash } from "../../src/domain/blake3.ts";

// Published BLAKE3 test vectors (input byte i is i % 251).
const patterned = (length: number) => Uint8Array.from({ length }, (_, i) => i % 251);
const VECTORS: Array<[Uint8Array, string]> = [
  [new Uint8Array(0), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"],
  [patterned(1), "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"],
  [patterned(1024), "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"],
];

describe("blake3 helpers", () => {
  it("match the published test vectors", async () => {
    for (const [input, hex] of VECTORS) expect(await blake3Hex(input)).toBe(hex);
  });

  it("hash text as its UTF-8 bytes", async () => {
    expect(await blake3Hex("abc")).toBe("6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85");
  });

  it("stream hashing over uneven chunks equals the one-shot hash", async () => {
    const data = patterned(300_001);
    async function* chunks() {
      for (let at = 0, size = 1; at < data.length; at += size, size = (size * 7) % 65_537 || 1) {
        yield data.subarray(at, at + size);
      }
    }
    expect(await blake3HexOfStream(chunks())).toBe(await referenceBlake3(data));
  });

  it("hashers are independent of each other", async () => {
    const a = await createBlake3Hasher();
    const b = await createBlake3Hasher();
    a.update(patterned(10));
    b.update(patterned(20));
    expect(a.digestHex()).toBe(await referenceBlake3(patterned(10)));
    expect(b.digestHex()).toBe(await referenceBlake3(patterned(20)));
  });

  it("hash natively where the prebuilt binding exists, and the same in the wasm fallback", async () => {
    if (process.platform === "linux" && process.arch === "x64") expect(blake3Backend).toBe("native");
    const script = `import { blake3Backend, blake3Hex, createBlake3Hasher } from "./src/domain/blake3.ts";
      const h = await createBlake3Hasher(); h.update(new Uint8Array(1025).fill(7));
      console.log(JSON.stringify([blake3Backend, await blake3Hex("abc"), h.digestHex()]));`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      env: { ...process.env, FLOWGATE_BLAKE3: "wasm" },
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual([
      "wasm",
      "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85",
      await referenceBlake3(new Uint8Array(1025).fill(7)),
    ]);
  });

  it("parse and format the wire form", () => {
    const hex = VECTORS[0]![1];
    expect(toBlake3Hash(hex)).toBe(`blake3:${hex}`);
    expect(parseBlake3Hash(`blake3:${hex}`)).toBe(hex);
    expect(parseBlake3Hash(`blake3:${hex.toUpperCase()}`)).toBe(hex);
    for (const bad of [hex, `sha256:${hex}`, `blake3:${hex.slice(1)}`, `blake3:${hex}0`, `blake3:${"g".repeat(64)}`, 42, null]) {
      expect(parseBlake3Hash(bad)).toBeNull();
    }
    expect(isBlake3Hex(hex)).toBe(true);
    expect(isBlake3Hex(hex.toUpperCase())).toBe(false);
  });
});

// WS-5: binary frame layouts, byte by byte (big-endian).
import { describe, expect, it } from "vitest";
import { decodeFrame, previewImageFrame, previewWithMetadataFrame, textFrame } from "../../src/wire/binary-frames.ts";

describe("binary frames", () => {
  it("WS-5 PREVIEW_IMAGE: type 1, image_type 1 for JPEG and 2 for PNG, then the bytes", () => {
    const jpeg = previewImageFrame("image/jpeg", Buffer.from([0xff, 0xd8, 0xff]));
    expect([...jpeg]).toEqual([0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xd8, 0xff]);
    const png = previewImageFrame("image/png", Buffer.from([0x89]));
    expect([...png.subarray(0, 8)]).toEqual([0, 0, 0, 1, 0, 0, 0, 2]);
  });

  it("WS-5 TEXT: type 3, node id length, node id, text", () => {
    const f = textFrame("12", "héllo");
    expect([...f.subarray(0, 10)]).toEqual([0, 0, 0, 3, 0, 0, 0, 2, 0x31, 0x32]);
    expect(f.subarray(10).toString("utf8")).toBe("héllo");
    expect(decodeFrame(f)).toEqual({ type: 3, nodeId: "12", text: "héllo" });
  });

  it("WS-5 PREVIEW_IMAGE_WITH_METADATA: type 4, metadata length, JSON, image bytes", () => {
    const meta = { node_id: "4", display_node_id: "4", real_node_id: "4", prompt_id: "p", parent_node_id: null };
    const f = previewWithMetadataFrame(meta, Buffer.from([1, 2, 3]));
    const len = Buffer.byteLength(JSON.stringify(meta));
    expect(f.readUInt32BE(0)).toBe(4);
    expect(f.readUInt32BE(4)).toBe(len);
    expect(JSON.parse(f.subarray(8, 8 + len).toString("utf8"))).toEqual(meta);
    expect([...f.subarray(8 + len)]).toEqual([1, 2, 3]);
  });
});

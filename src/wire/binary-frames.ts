// Binary WebSocket frames of the hosted interface, shared by the server (encodes) and the clients
// (decode), so the client package carries no server module; every integer is big-endian.

import { BinaryFrameType as FRAME, PreviewImageType } from "../../generated/asyncapi-types.ts";

/** image_type of a PREVIEW_IMAGE frame. */
export function imageTypeOf(contentType: string): PreviewImageType {
  return contentType === "image/png" ? PreviewImageType.PNG : PreviewImageType.JPEG;
}

/** PREVIEW_IMAGE: type (1), image_type (1 JPEG, 2 PNG), image bytes. */
export function previewImageFrame(contentType: string, image: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(FRAME.PREVIEW_IMAGE, 0);
  head.writeUInt32BE(imageTypeOf(contentType), 4);
  return Buffer.concat([head, image]);
}

/** TEXT: type (3), node id length, node id (UTF-8), text (UTF-8). */
export function textFrame(nodeId: string, text: string): Buffer {
  const id = Buffer.from(nodeId, "utf8");
  const head = Buffer.alloc(8);
  head.writeUInt32BE(FRAME.TEXT, 0);
  head.writeUInt32BE(id.length, 4);
  return Buffer.concat([head, id, Buffer.from(text, "utf8")]);
}

/** Metadata of a PREVIEW_IMAGE_WITH_METADATA frame. */
export interface PreviewMetadata {
  node_id: string;
  display_node_id: string;
  real_node_id: string;
  prompt_id: string;
  parent_node_id: string | null;
  image_type?: string;
}

/** PREVIEW_IMAGE_WITH_METADATA: type (4), metadata length, metadata JSON (UTF-8), image bytes. */
export function previewWithMetadataFrame(metadata: PreviewMetadata, image: Uint8Array): Buffer {
  const json = Buffer.from(JSON.stringify(metadata), "utf8");
  const head = Buffer.alloc(8);
  head.writeUInt32BE(FRAME.PREVIEW_IMAGE_WITH_METADATA, 0);
  head.writeUInt32BE(json.length, 4);
  return Buffer.concat([head, json, image]);
}

/** Decodes any of the three frames (clients and tests). */
export function decodeFrame(
  frame: Buffer,
):
  | { type: typeof FRAME.PREVIEW_IMAGE; imageType: number; image: Buffer }
  | { type: typeof FRAME.TEXT; nodeId: string; text: string }
  | { type: typeof FRAME.PREVIEW_IMAGE_WITH_METADATA; metadata: PreviewMetadata; image: Buffer } {
  const type = frame.readUInt32BE(0);
  if (type === FRAME.PREVIEW_IMAGE) return { type: FRAME.PREVIEW_IMAGE, imageType: frame.readUInt32BE(4), image: frame.subarray(8) };
  const len = frame.readUInt32BE(4);
  if (type === FRAME.TEXT) return { type: FRAME.TEXT, nodeId: frame.subarray(8, 8 + len).toString("utf8"), text: frame.subarray(8 + len).toString("utf8") };
  if (type === FRAME.PREVIEW_IMAGE_WITH_METADATA) {
    return { type: FRAME.PREVIEW_IMAGE_WITH_METADATA, metadata: JSON.parse(frame.subarray(8, 8 + len).toString("utf8")), image: frame.subarray(8 + len) };
  }
  throw new Error(`unknown binary frame type ${type}`);
}

// safetensors layout: u64 little-endian header length, a JSON header (dtype, shape,
// data_offsets per tensor, optional __metadata__), then the raw little-endian tensor bytes.

import { endianness } from "node:os";
import { allocBytes } from "./tensors.ts";

const LITTLE_ENDIAN = endianness() === "LE";

/** One float32 tensor to store. */
export interface F32Tensor {
  name: string;
  shape: readonly number[];
  data: Float32Array;
}

/** Serialises float32 tensors and string metadata into a safetensors file. */
export function encodeSafetensors(tensors: readonly F32Tensor[], metadata?: Record<string, string>): Buffer {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  const blobs: Buffer[] = [];
  let offset = 0;
  // safetensors orders tensors by name within a dtype; all ours are F32.
  for (const t of [...tensors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const bytes = allocBytes(t.data.length * 4);
    // Float32Array is host-endian: on little-endian hosts its bytes are the file's bytes.
    if (LITTLE_ENDIAN) bytes.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    else for (let i = 0; i < t.data.length; i++) bytes.writeFloatLE(t.data[i]!, i * 4);
    header[t.name] = { dtype: "F32", shape: [...t.shape], data_offsets: [offset, offset + bytes.length] };
    offset += bytes.length;
    blobs.push(bytes);
  }
  let json = JSON.stringify(header);
  // Pad with spaces so the tensor data starts 8-byte aligned, as the reference writer does.
  json += " ".repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const jsonBytes = Buffer.from(json, "utf8");
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(jsonBytes.length), 0);
  return Buffer.concat([length, jsonBytes, ...blobs]);
}

/** Parses a safetensors file holding F32 tensors (the inverse of encodeSafetensors). */
export function decodeSafetensors(file: Buffer): { metadata: Record<string, string> | undefined; tensors: Map<string, F32Tensor> } {
  const length = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.toString("utf8", 8, 8 + length)) as Record<string, unknown>;
  const base = 8 + length;
  const tensors = new Map<string, F32Tensor>();
  let metadata: Record<string, string> | undefined;
  for (const [name, entry] of Object.entries(header)) {
    if (name === "__metadata__") {
      metadata = entry as Record<string, string>;
      continue;
    }
    const { dtype, shape, data_offsets } = entry as { dtype: string; shape: number[]; data_offsets: [number, number] };
    if (dtype !== "F32") throw new Error(`unsupported dtype ${dtype}`);
    const data = new Float32Array((data_offsets[1] - data_offsets[0]) / 4);
    for (let i = 0; i < data.length; i++) data[i] = file.readFloatLE(base + data_offsets[0] + i * 4);
    tensors.set(name, { name, shape, data });
  }
  return { metadata, tensors };
}

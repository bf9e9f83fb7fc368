// A minimal WebM (Matroska) muxer for one VP8 video track of key frames. Lossy WebP
// images carry exactly a VP8 key frame, so sharp's WebP encoder provides the codec.

/** Pulls the VP8 bitstream out of a lossy WebP file. */
export function vp8FromWebp(webp: Buffer): Buffer {
  if (webp.toString("latin1", 0, 4) !== "RIFF" || webp.toString("latin1", 8, 12) !== "WEBP") throw new Error("not a WebP file");
  let at = 12;
  while (at + 8 <= webp.length) {
    const fourcc = webp.toString("latin1", at, at + 4);
    const size = webp.readUInt32LE(at + 4);
    if (fourcc === "VP8 ") return webp.subarray(at + 8, at + 8 + size);
    at += 8 + size + (size % 2);
  }
  throw new Error("WebP has no VP8 (lossy) frame");
}

/** Muxes VP8 key frames at a constant frame rate into a WebM file. */
export function muxWebm(frames: readonly Buffer[], width: number, height: number, fps: number): Buffer {
  const frameMs = (i: number) => Math.round((i * 1000) / fps);
  const clusters: Buffer[] = [];
  let clusterStart = 0;
  let blocks: Buffer[] = [];
  const flush = () => {
    if (blocks.length) clusters.push(element(0x1f43b675, Buffer.concat([uintElement(0xe7, clusterStart), ...blocks])));
    blocks = [];
  };
  frames.forEach((frame, i) => {
    const t = frameMs(i);
    // Block timecodes are signed 16-bit offsets from the cluster's timestamp.
    if (t - clusterStart > 30_000) {
      flush();
      clusterStart = t;
    }
    const head = Buffer.alloc(4);
    head[0] = 0x81; // track number 1 as a one-byte vint
    head.writeInt16BE(t - clusterStart, 1);
    head[3] = 0x80; // key frame
    blocks.push(element(0xa3, Buffer.concat([head, frame])));
  });
  flush();
  const ebml = element(
    0x1a45dfa3,
    Buffer.concat([
      uintElement(0x4286, 1),
      uintElement(0x42f7, 1),
      uintElement(0x42f2, 4),
      uintElement(0x42f3, 8),
      stringElement(0x4282, "webm"),
      uintElement(0x4287, 2),
      uintElement(0x4285, 2),
    ]),
  );
  const info = element(
    0x1549a966,
    Buffer.concat([
      uintElement(0x2ad7b1, 1_000_000), // timestamps in milliseconds
      stringElement(0x4d80, "flowgate"),
      stringElement(0x5741, "flowgate"),
      floatElement(0x4489, (frames.length * 1000) / fps),
    ]),
  );
  const video = element(0xe0, Buffer.concat([uintElement(0xb0, width), uintElement(0xba, height)]));
  const track = element(
    0xae,
    Buffer.concat([
      uintElement(0xd7, 1),
      uintElement(0x73c5, 1),
      uintElement(0x83, 1), // video
      uintElement(0x9c, 0),
      stringElement(0x86, "V_VP8"),
      uintElement(0x23e383, Math.round(1e9 / fps)),
      video,
    ]),
  );
  const tracks = element(0x1654ae6b, track);
  const segment = element(0x18538067, Buffer.concat([info, tracks, ...clusters]));
  return Buffer.concat([ebml, segment]);
}

function idBytes(id: number): Buffer {
  const bytes: number[] = [];
  for (let v = id; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from(bytes);
}

/** EBML variable-size integer for element sizes. */
function sizeVint(size: number): Buffer {
  let length = 1;
  while (size >= 2 ** (7 * length) - 1) length++;
  if (length > 8) throw new Error("element too large");
  const out = Buffer.alloc(length);
  let v = size;
  for (let i = length - 1; i >= 0; i--) {
    out[i] = v & 0xff;
    v = Math.floor(v / 256);
  }
  out[0] = out[0]! | (0x80 >> (length - 1));
  return out;
}

function element(id: number, payload: Buffer): Buffer {
  return Buffer.concat([idBytes(id), sizeVint(payload.length), payload]);
}

function uintElement(id: number, value: number): Buffer {
  const bytes: number[] = [];
  for (let v = value; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return element(id, Buffer.from(bytes.length ? bytes : [0]));
}

function stringElement(id: number, value: string): Buffer {
  return element(id, Buffer.from(value, "ascii"));
}

function floatElement(id: number, value: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(value, 0);
  return element(id, b);
}

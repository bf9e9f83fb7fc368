// POST /api/upload/mask decodes two images: a small PNG that declares a huge image (a
// decompression bomb) is refused from its header, before anything is decoded, as the original
// (`original_ref`) and as the mask alike; an image within the bound is composed as before.
import { connect } from "node:net";
import { crc32, deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "../../generated/validators.js";
import { pngOf } from "../engine/helpers.ts";
import { startTestServer, type TestServer } from "../server/helpers.ts";

/** A valid PNG of `width` x `height` black pixels, 1 bit each: a few KB that decode to width x height x 4 bytes. */
function bombPng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "latin1");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // grayscale
  const rows = Buffer.alloc((1 + Math.ceil(width / 8)) * height); // filter 0, all black
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(rows, { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.stop();
});

async function uploadImage(bytes: Buffer): Promise<string> {
  const form = new FormData();
  form.append("image", new Blob([new Uint8Array(bytes)], { type: "image/png" }), "original.png");
  const res = await fetch(`${s.url}/api/upload/image`, { method: "POST", body: form });
  expect(res.status).toBe(200);
  return ((await res.json()) as { name: string }).name;
}

async function uploadMask(mask: Buffer, original: string): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append("image", new Blob([new Uint8Array(mask)], { type: "image/png" }), "mask.png");
  form.append("original_ref", JSON.stringify({ filename: original }));
  const res = await fetch(`${s.url}/api/upload/mask`, { method: "POST", body: form });
  return { status: res.status, body: await res.json() };
}

/**
 * A raw POST /api/upload/mask that declares a 100 MB body and sends only `parts` (form parts, in
 * order): the answer, which must come while the body is still incomplete, or never.
 */
function answerBeforeTheBody(parts: Array<{ name: string; filename?: string; bytes: Buffer }>): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(s.url);
  const sent = Buffer.concat(
    parts.flatMap((p) => [
      Buffer.from(`--xyz\r\ncontent-disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ""}\r\n\r\n`),
      p.bytes,
      ...(p.filename ? [] : [Buffer.from("\r\n")]),
    ]),
  );
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    socket.on("error", reject);
    // The server ends its side once it has answered (it reads on meanwhile): the answer is whole.
    socket.on("end", () => {
      socket.destroy();
      const text = Buffer.concat(received).toString("utf8");
      resolve({ status: Number(text.slice(9, 12)), body: JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) });
    });
    socket.write(
      `POST /api/upload/mask HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: multipart/form-data; boundary=xyz\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n`,
    );
    socket.write(sent);
  });
}

describe("POST /api/upload/mask refuses before reading what it does not need", () => {
  it("a mask whose header declares too many pixels is refused from its first bytes", async () => {
    const original = await uploadImage(await pngOf(4, 4, 3, new Array(48).fill(100)));
    const bomb = bombPng(12_000, 12_000);
    const res = await answerBeforeTheBody([
      { name: "original_ref", bytes: Buffer.from(JSON.stringify({ filename: original })) },
      { name: "image", filename: "mask.png", bytes: bomb.subarray(0, 8192) },
    ]);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.error.details).fields).toEqual([{ field: "image", reason: "too_large" }]);
  });

  it("an original_ref sent before the image is checked before the image is read", async () => {
    const res = await answerBeforeTheBody([
      { name: "original_ref", bytes: Buffer.from(JSON.stringify({ filename: "missing.png" })) },
      { name: "image", filename: "mask.png", bytes: Buffer.alloc(8192) },
    ]);
    expect(res.status).toBe(404);
    expect(res.body.error.type).toBe("not_found");
  });

  it("bytes that are no image format are refused from their first bytes", async () => {
    const original = await uploadImage(await pngOf(4, 4, 3, new Array(48).fill(100)));
    const res = await answerBeforeTheBody([
      { name: "original_ref", bytes: Buffer.from(JSON.stringify({ filename: original })) },
      { name: "image", filename: "mask.png", bytes: Buffer.alloc(8192, 0x61) },
    ]);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.error.details).fields).toEqual([{ field: "image", reason: "invalid_image" }]);
  });

  it("a mask file larger than an image of its declared size can be is 413 before the rest is read", async () => {
    const original = await uploadImage(await pngOf(4, 4, 3, new Array(48).fill(100)));
    const png = await pngOf(4, 4, 4, new Array(64).fill(200));
    // A valid 4x4 PNG, then 2 MiB more: more than 4x4 pixels at any depth, plus the slack.
    const res = await answerBeforeTheBody([
      { name: "original_ref", bytes: Buffer.from(JSON.stringify({ filename: original })) },
      { name: "image", filename: "mask.png", bytes: Buffer.concat([png, Buffer.alloc(2 * 1024 * 1024)]) },
    ]);
    expect(res.status).toBe(413);
    expect(res.body.error.type).toBe("payload_too_large");
  });
});

describe("POST /api/upload/mask against decompression bombs", () => {
  const bomb = bombPng(12_000, 12_000);

  it("a bomb named as the original is refused from its header: 400, too_large", async () => {
    expect(bomb.byteLength).toBeLessThan(100_000);
    const original = await uploadImage(bomb);
    const res = await uploadMask(await pngOf(4, 4, 4, new Array(64).fill(200)), original);
    expect(res.status).toBe(400);
    expect(v.schema_HostedError(res.body)).toBe(true);
    expect(res.body.error.type).toBe("invalid_request");
    expect(res.body.error.message).toMatch(/12000x12000 pixels/);
    expect(JSON.parse(res.body.error.details).fields).toEqual([{ field: "original_ref", reason: "too_large" }]);
  });

  it("a bomb as the mask is refused the same way, before it is decoded", async () => {
    const original = await uploadImage(await pngOf(4, 4, 3, new Array(48).fill(100)));
    const res = await uploadMask(bomb, original);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.error.details).fields).toEqual([{ field: "image", reason: "too_large" }]);
  });

  it("images within the bound are composed as before", async () => {
    const original = await uploadImage(await pngOf(4, 4, 3, new Array(48).fill(100)));
    const res = await uploadMask(await pngOf(4, 4, 4, new Array(64).fill(200)), original);
    expect(res.status).toBe(200);
    expect(res.body.name).toMatch(/\.png$/);
  });

  it("a mask one byte past --max-upload-size is 413; one at the bound is read", async () => {
    const small = await startTestServer({ flags: ["--max-upload-size", "2000"] });
    try {
      const form = new FormData();
      form.append("image", new Blob([new Uint8Array(await pngOf(4, 4, 3, new Array(48).fill(100)))], { type: "image/png" }), "o.png");
      const original = ((await (await fetch(`${small.url}/api/upload/image`, { method: "POST", body: form })).json()) as { name: string }).name;
      const send = async (size: number) => {
        const f = new FormData();
        f.append("image", new Blob([new Uint8Array(size)], { type: "image/png" }), "mask.png");
        f.append("original_ref", JSON.stringify({ filename: original }));
        const res = await fetch(`${small.url}/api/upload/mask`, { method: "POST", body: f });
        return { status: res.status, body: (await res.json()) as any };
      };
      const over = await send(2001);
      expect(over.status).toBe(413);
      expect(over.body.error.type).toBe("payload_too_large");
      const at = await send(2000); // read, then refused as no image
      expect(at.status).toBe(400);
      expect(at.body.error.type).toBe("invalid_request");
    } finally {
      await small.stop();
    }
  });
});

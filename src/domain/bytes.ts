// Bytes that are kept: Node's Buffer.from(string) and small allocUnsafe buffers share a 64 KiB
// pool slab (Buffer.poolSize on Node 24), and one small buffer kept alive keeps its whole slab.
// What a cache or a long-lived record holds is copied into an ArrayBuffer of its own size.

/** UTF-8 bytes of `text` in a buffer of their own (never a pool slab): for bytes that are kept. */
export function ownUtf8(text: string): Buffer {
  const out = Buffer.allocUnsafeSlow(Buffer.byteLength(text, "utf8"));
  out.write(text, "utf8");
  return out;
}

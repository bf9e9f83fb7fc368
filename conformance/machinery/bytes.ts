// Every output the suite downloads, against what its job declared: size_bytes (OUT-5), hash
// (OUT-4), content_type against the bytes' own signature (OUT-5); every 206 against the same range
// of the full body with a Content-Range of the right total, and an unsatisfiable range 416 (AST-4).
import { blake3 } from "hash-wasm";

type Obj = Record<string, unknown>;

/** What a check found wrong with some bytes. */
export interface BytesFinding {
  rule: string;
  message: string;
  key: string;
}

const at = (b: Uint8Array, i: number, s: string) => [...s].every((c, k) => b[i + k] === c.charCodeAt(0));
const bytesAre = (b: Uint8Array, sig: number[]) => sig.every((x, i) => b[i] === x);

/** Signatures of the media types outputs come in. */
const SIGNATURES: Array<{ name: string; types: string[]; test: (b: Uint8Array) => boolean }> = [
  { name: "PNG", types: ["image/png"], test: (b) => bytesAre(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { name: "JPEG", types: ["image/jpeg", "image/jpg"], test: (b) => bytesAre(b, [0xff, 0xd8, 0xff]) },
  { name: "WebP", types: ["image/webp"], test: (b) => at(b, 0, "RIFF") && at(b, 8, "WEBP") },
  { name: "GIF", types: ["image/gif"], test: (b) => at(b, 0, "GIF87a") || at(b, 0, "GIF89a") },
  { name: "WebM", types: ["video/webm", "audio/webm"], test: (b) => bytesAre(b, [0x1a, 0x45, 0xdf, 0xa3]) },
  { name: "MP4", types: ["video/mp4", "audio/mp4", "video/quicktime"], test: (b) => at(b, 4, "ftyp") },
  { name: "FLAC", types: ["audio/flac", "audio/x-flac"], test: (b) => at(b, 0, "fLaC") },
  { name: "WAV", types: ["audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"], test: (b) => at(b, 0, "RIFF") && at(b, 8, "WAVE") },
  { name: "MP3", types: ["audio/mpeg", "audio/mp3"], test: (b) => at(b, 0, "ID3") || (b[0] === 0xff && ((b[1] ?? 0) & 0xe0) === 0xe0) },
];

function utf8(b: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(b);
  } catch {
    return undefined;
  }
}

/** What the bytes are, by signature ("PNG", "text", "binary data"...). */
export function sniff(b: Uint8Array): string {
  const sig = SIGNATURES.find((s) => s.test(b));
  if (sig) return sig.name;
  const text = utf8(b);
  if (text === undefined) return "binary data";
  try {
    JSON.parse(text);
    return "JSON";
  } catch {
    return "text";
  }
}

/** Why the bytes are not of the declared media type, or undefined when they are (or it cannot be told). */
export function signatureMismatch(contentType: string, b: Uint8Array): string | undefined {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  const sig = SIGNATURES.find((s) => s.types.includes(type));
  if (sig) return sig.test(b) ? undefined : `content_type ${type}, but the bytes are ${sniff(b)}`;
  if (type === "application/json" || type.endsWith("+json")) {
    const text = utf8(b);
    try {
      if (text !== undefined) JSON.parse(text);
      if (text !== undefined) return undefined;
    } catch {
      // reported below
    }
    return `content_type ${type}, but the bytes are ${sniff(b)}, not JSON`;
  }
  if (type.startsWith("text/")) return utf8(b) === undefined ? `content_type ${type}, but the bytes are not UTF-8 text (${sniff(b)})` : undefined;
  return undefined;
}

/** The declaration of one asset's bytes: from an output (size, hash, type) and the full body once read. */
interface Known {
  id: string;
  out?: Obj;
  full?: Uint8Array;
  checked: boolean;
}

const CONTENT_PATH = /\/api\/v2\/assets\/([^/]+)\/content$/;
const RANGE = /^bytes=(\d*)-(\d*)$/;

/** Downloads of outputs and asset content, checked against their declarations. */
export class ByteChecks {
  private readonly byId = new Map<string, Known>();
  private readonly byUrl = new Map<string, string>();

  private known(id: string): Known {
    let k = this.byId.get(id);
    if (!k) this.byId.set(id, (k = { id, checked: false }));
    return k;
  }

  /** An output seen in a job view: its url now leads to its declaration. */
  declare(out: Obj): void {
    if (typeof out.id !== "string") return;
    const k = this.known(out.id);
    if (!k.out || (k.out.hash == null && out.hash != null && !k.checked)) k.out = out;
    if (typeof out.url === "string") this.byUrl.set(out.url, out.id);
  }

  /** The asset id a URL serves, if the suite knows it. */
  idOf(url: string): string | undefined {
    const byUrl = this.byUrl.get(url);
    if (byUrl) return byUrl;
    try {
      return CONTENT_PATH.exec(new URL(url).pathname)?.[1];
    } catch {
      return undefined;
    }
  }

  /** A redirect from a known URL: its target serves the same asset. */
  redirected(from: string, location: string): void {
    const id = this.idOf(from);
    if (id) this.byUrl.set(location, id);
  }

  /**
   * Checks one answer for a known asset's bytes; `refetch` reads the whole body when a 206 came
   * before any full read. Returns what is wrong, under its rule.
   */
  async check(
    url: string,
    range: string | undefined,
    status: number,
    headers: Headers,
    body: Uint8Array,
    refetch: () => Promise<Uint8Array | undefined>,
  ): Promise<BytesFinding[]> {
    const id = this.idOf(url);
    if (!id) return [];
    const k = this.known(id);
    const found: BytesFinding[] = [];
    const add = (rule: string, message: string, key = `${rule} ${message.replace(/\d+/g, "N")}`) =>
      found.push({ rule, message: `asset ${id}: ${message}`, key });
    const m = range ? RANGE.exec(range) : null;
    const wanted = m && (m[1] || m[2]) ? { start: m[1] ? Number(m[1]) : undefined, end: m[2] ? Number(m[2]) : undefined } : undefined;
    if (status === 200) {
      k.full ??= body;
      if (!k.checked && k.out) {
        k.checked = true;
        await this.full(k.out, body, add);
      }
      return found;
    }
    // A range is judged against the content as served in full (a wrong size_bytes is OUT-5's).
    k.full ??= await refetch();
    const size = k.full?.byteLength;
    if (status === 206) {
      const cr = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(headers.get("content-range") ?? "");
      if (!cr) {
        add("AST-4", `a 206 without a valid Content-Range (${JSON.stringify(headers.get("content-range"))})`);
        return found;
      }
      const [a, b, total] = [Number(cr[1]), Number(cr[2]), cr[3] === "*" ? undefined : Number(cr[3])];
      if (size !== undefined && total !== size) add("AST-4", `Content-Range ${cr[0]} gives the total ${cr[3]}, the content is ${size} bytes`);
      if (b - a + 1 !== body.byteLength) add("AST-4", `Content-Range ${cr[0]} announces ${b - a + 1} bytes, the 206 carries ${body.byteLength}`);
      if (wanted?.start !== undefined && a !== wanted.start) add("AST-4", `Range ${range} answered Content-Range ${cr[0]}`);
      if (k.full) {
        const slice = k.full.subarray(a, b + 1);
        const i = slice.findIndex((x, j) => body[j] !== x);
        if (i >= 0 || slice.byteLength !== body.byteLength)
          add("AST-4", `the 206 for ${cr[0]} differs from the same range of the full body${i >= 0 ? ` at byte ${a + i}` : ""}`);
      }
    } else if (status === 416) {
      if (wanted?.start !== undefined && size !== undefined && wanted.start < size)
        add("AST-4", `Range ${range} is satisfiable (${size} bytes), yet answered 416`);
      const cr = headers.get("content-range");
      if (cr !== null && size !== undefined && cr !== `bytes */${size}`) add("AST-4", `a 416 with Content-Range ${cr}, not bytes */${size}`);
    }
    if (status === 206 && wanted?.start !== undefined && size !== undefined && wanted.start >= size)
      add("AST-4", `Range ${range} is beyond the ${size} bytes, yet answered 206, not 416`);
    return found;
  }

  private async full(out: Obj, body: Uint8Array, add: (rule: string, message: string) => void): Promise<void> {
    if (typeof out.size_bytes === "number" && out.size_bytes !== body.byteLength)
      add("OUT-5", `size_bytes ${out.size_bytes}, the url served ${body.byteLength} bytes`);
    if (typeof out.hash === "string") {
      const actual = `blake3:${await blake3(body)}`;
      if (actual !== out.hash) add("OUT-4", `hash ${out.hash}, the bytes hash to ${actual}`);
    }
    if (typeof out.content_type === "string") {
      const why = signatureMismatch(out.content_type, body);
      if (why) add("OUT-5", why);
    }
  }
}

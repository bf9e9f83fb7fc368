// The outputs of an `executed` message (or a history entry): every file info and every inline
// text of a node's ui dict, each with its output type. Files are fetched with GET /view, or read
// from ComfyUI's output folder when flowgate runs beside it (output-folder.ts).
import type { EngineOutput, OutputType } from "../engine.ts";
import { sniff } from "../media/sniff.ts";
import type { ComfyHttp, FileInfo } from "./http-api.ts";
import type { OutputFolder } from "./output-folder.ts";

/** One output found in a ui dict. */
export type UiOutput = { kind: "file"; key: string; file: FileInfo } | { kind: "text"; key: string; text: string; index: number };

/** Every output of a ui dict: file infos under any key, and the strings under `text`. */
export function outputsOfUi(ui: Record<string, unknown>): UiOutput[] {
  const out: UiOutput[] = [];
  for (const [key, list] of Object.entries(ui)) {
    if (!Array.isArray(list)) continue;
    list.forEach((item, index) => {
      if (key === "text" && typeof item === "string") out.push({ kind: "text", key, text: item, index });
      const f = item as Partial<FileInfo> | null;
      if (f && typeof f === "object" && typeof f.filename === "string" && f.filename !== "") {
        out.push({
          kind: "file",
          key,
          file: { filename: f.filename, subfolder: typeof f.subfolder === "string" ? f.subfolder : "", type: typeof f.type === "string" ? f.type : "output" },
        });
      }
    });
  }
  return out;
}

/** Identity of an output, to fetch each file once even when history repeats it. */
export function outputKey(nodeId: string, o: UiOutput): string {
  return o.kind === "file" ? `file:${o.file.type}/${o.file.subfolder}/${o.file.filename}` : `text:${nodeId}:${o.index}`;
}

const BY_EXTENSION: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  bmp: "image/bmp",
  tif: "image/tiff",
  tiff: "image/tiff",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  mkv: "video/x-matroska",
  flac: "audio/flac",
  wav: "audio/wav",
  mp3: "audio/mpeg",
  ogg: "audio/ogg",
  opus: "audio/opus",
  m4a: "audio/mp4",
  txt: "text/plain; charset=utf-8",
  json: "application/json",
  glb: "model/gltf-binary",
  obj: "model/obj",
  latent: "application/octet-stream",
  safetensors: "application/octet-stream",
};

/** The media type of fetched bytes: magic numbers, then the server's header, then the extension. */
export function contentTypeOf(filename: string, bytes: Buffer, header: string | null): string {
  const sniffed = sniff(bytes);
  if (sniffed && sniffed.format !== "text") return sniffed.mediaType;
  const ext = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase() ?? "";
  const declared = header?.split(";")[0]?.trim().toLowerCase();
  if (declared && declared !== "application/octet-stream") return header!.trim();
  if (BY_EXTENSION[ext]) return BY_EXTENSION[ext]!;
  return sniffed ? "text/plain; charset=utf-8" : "application/octet-stream";
}

/** The output type of a file by the ui key it was listed under, then by its media type. */
export function outputTypeOf(key: string, contentType: string): OutputType {
  const major = contentType.split("/")[0];
  switch (key) {
    case "images":
      return major === "video" ? "video" : "image";
    case "gifs":
    case "video":
    case "videos":
      return "video";
    case "audio":
      return "audio";
    case "latents":
      return "latent";
    case "text":
      return "text";
    case "files":
      return "file";
    default:
      return major === "image" ? "image" : major === "video" ? "video" : major === "audio" ? "audio" : "file";
  }
}

/**
 * Fetches (or, for inline text, encodes) one output. A file the instance's output folder gives
 * (see OutputFolder) is read from there, saving a /view round trip and ComfyUI's serving.
 */
export async function materialize(http: ComfyHttp, node: { node_id: string; class_type: string }, o: UiOutput, folder: OutputFolder): Promise<EngineOutput> {
  if (o.kind === "text") {
    return {
      ...node,
      // Inline text has no file name in ComfyUI; it gets one so it can be an asset.
      name: `${node.class_type || "text"}_${node.node_id}_${String(o.index + 1).padStart(5, "0")}_.txt`.replace(/[^\w.-]/g, "_"),
      subfolder: "",
      type: "text",
      content_type: "text/plain; charset=utf-8",
      data: Buffer.from(o.text, "utf8"),
      folder: "temp",
    };
  }
  const local = await folder.read(o.file);
  const { bytes, contentType } = local !== null ? { bytes: local, contentType: null } : await http.view(o.file);
  if (local === null) await folder.confirm(o.file, bytes);
  const type = contentTypeOf(o.file.filename, bytes, contentType);
  return {
    ...node,
    name: o.file.filename,
    subfolder: o.file.subfolder,
    type: outputTypeOf(o.key, type),
    content_type: type,
    data: bytes,
    // ComfyUI's "input" files listed by a node are shown, not produced: previews like "temp".
    folder: o.file.type === "output" ? "output" : "temp",
  };
}

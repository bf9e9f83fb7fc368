// Inputs for ComfyUI: core/ASSET references and flowgate upload names become files in the
// instance's input folder (POST /upload/image), each blob uploaded once per instance, and the
// graph is rewritten to the names ComfyUI answered with.
import { isAssetObject, parseAssetRef } from "../asset-refs.ts";
import type { AssetResolver, UploadResolver } from "../engine.ts";
import { EngineError } from "../errors.ts";
import { isPlainObject } from "../graph.ts";
import { extensionFor, sniff } from "../media/sniff.ts";
import type { NodeRegistry } from "../nodes/registry.ts";
import type { ComfyHttp } from "./http-api.ts";
import { cloneJson } from "../../domain/exact-json.ts";

/** Uploaded names by blob, per instance; cleared when the instance restarts. */
export class UploadCache {
  private readonly names = new Map<string, Promise<string>>();

  /** The graph value naming `bytes` on the instance, uploading them the first time. */
  nameFor(http: ComfyHttp, hash: string, bytes: Buffer, contentType: string, hintName: string): Promise<string> {
    const hex =
      hash
        .replace(/^blake3:/, "")
        .replace(/[^0-9a-f]/gi, "")
        .slice(0, 32) || "blob";
    const media = (sniff(bytes)?.mediaType ?? contentType).split(";")[0]!.trim();
    const ext = extensionFor(media) ?? /\.([A-Za-z0-9]{1,8})$/.exec(hintName)?.[1]?.toLowerCase() ?? "bin";
    // A name derived from the bytes: uploading it again (overwrite) is harmless.
    const filename = `flowgate-${hex}.${ext}`;
    const key = `${hex}.${ext}`;
    let p = this.names.get(key);
    if (!p) {
      p = http.uploadImage(bytes, filename, media).then((f) => (f.subfolder ? `${f.subfolder}/${f.filename}` : f.filename));
      this.names.set(key, p);
      p.catch(() => this.names.delete(key));
    }
    return p;
  }

  clear(): void {
    this.names.clear();
  }
}

/** Resolvers of one run. */
export interface InputResolvers {
  resolveAsset?: AssetResolver | undefined;
  resolveUpload?: UploadResolver | undefined;
}

/**
 * A copy of the graph whose file inputs name files on the instance. core/ASSET references are
 * resolved and uploaded; an upload name the resolver knows is uploaded too; any other name is
 * left as it is (a file already in ComfyUI's input folder, which ComfyUI itself checks).
 */
export async function prepareInputs(
  graph: Record<string, unknown>,
  registry: NodeRegistry,
  http: ComfyHttp,
  cache: UploadCache,
  resolvers: InputResolvers,
): Promise<Record<string, unknown>> {
  const out = cloneJson(graph);
  const jobs: Promise<void>[] = [];
  for (const node of Object.values(out)) {
    if (!isPlainObject(node) || !isPlainObject(node.inputs) || typeof node.class_type !== "string") continue;
    const fileInputs = registry.get(node.class_type)?.fileInputs ?? [];
    const inputs = node.inputs;
    for (const [name, raw] of Object.entries(inputs)) {
      const value = isPlainObject(raw) && "__value__" in raw ? raw.__value__ : raw;
      if (isAssetObject(value)) {
        jobs.push(
          (async () => {
            const parsed = parseAssetRef(value);
            if (!("ref" in parsed) || !resolvers.resolveAsset) throw unavailable();
            const asset = await resolvers.resolveAsset(parsed.ref);
            inputs[name] = await cache.nameFor(http, asset.hash, asset.bytes, asset.content_type, parsed.ref.file_path ?? "");
          })(),
        );
      } else if (typeof value === "string" && value !== "" && fileInputs.includes(name) && resolvers.resolveUpload) {
        const resolve = resolvers.resolveUpload;
        jobs.push(
          (async () => {
            const found = await resolve(value);
            if (found) inputs[name] = await cache.nameFor(http, found.hash, found.bytes, "application/octet-stream", value);
          })(),
        );
      }
    }
  }
  await Promise.all(jobs);
  return out;
}

function unavailable(): EngineError {
  return new EngineError({ code: "invalid_input", message: "A referenced asset is no longer available.", node_id: null, class_type: null, traceback: null });
}

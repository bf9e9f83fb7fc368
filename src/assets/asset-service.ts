// Asset records over content-addressed blobs: uploads, reuse by hash, outputs, reads, deletion.
// Ownership is checked here; another caller's asset looks exactly like a missing one.
import type { Readable } from "node:stream";
import {
  HashMismatchError,
  INLINE_BLOB_MAX_BYTES,
  PayloadTooLargeError,
  blake3Hex,
  parseBlake3Hash,
  toBlake3Hash,
  type BlobStore,
  type ByteRange,
  type PutResult,
} from "../blobs/index.ts";
import type { AssetFolder, AssetRecord, AssetType, NewAsset, PendingBlob, RunFence, Store } from "../store/index.ts";
import type { BlobHealth } from "../blobs/blob-health.ts";
import { isOutOfSpace } from "../datadir/space.ts";
import { isDependencyUnavailable } from "../domain/network-errors.ts";
import { notFound, ServiceError } from "../domain/errors.ts";
import { uuidv7 } from "../domain/ids.ts";
import { isMediaType, mediaTypeFromName, sniffMediaType } from "./media-types.ts";

/** See AssetServiceOptions.outputWaitMs. */
export const OUTPUT_WAIT_MS = 60_000;

export interface AssetServiceOptions {
  store: Store;
  blobs: BlobStore;
  now: () => number;
  /** How long an upload lives, in ms. */
  retentionMs: number;
  /** Largest accepted upload, in bytes. */
  maxUploadBytes: number;
  /** Refuses new bytes while the data directory is short of space. */
  space?: { assertRoom(): void };
  /** Downloads go through this server even where the blob store could serve them itself (`--blob-proxy`). */
  proxyDownloads?: boolean;
  /** The blob store's availability: an output's put that finds it unavailable waits for it, up to `outputWaitMs`. */
  blobHealth?: Pick<BlobHealth, "waitAvailable" | "noteFailure">;
  /** Longest wait of an output's put for an unavailable blob store, in ms (default 60 s). */
  outputWaitMs?: number;
}

/** What an upload says about its bytes. */
export interface UploadMeta {
  content_type?: string | undefined;
  file_path?: string | undefined;
  expected_hash?: string | undefined;
  tags?: string[] | undefined;
  folder?: AssetFolder;
}

/** An output as the engine hands it over. */
export interface OutputFile {
  node_id: string;
  name: string;
  type: AssetType;
  content_type: string;
  data: Uint8Array;
  folder: AssetFolder;
}

/** An output whose bytes are stored (durable, or staged) and whose record is still to be written. */
/** How a run's output record is written (AssetService.recordOutput). */
export interface RecordOptions {
  /** Written only while the run holds its job. */
  fence?: RunFence;
  /** Retries the write until it lands, giving up where `giveUp` says. */
  persist?: <T>(write: () => Promise<T>, giveUp?: (err: unknown) => boolean) => Promise<T>;
}

export interface StoredOutput {
  record: NewAsset;
  put: PutResult;
  /** Wall-clock time just after the put: a later touch of the blob means another put uses it. */
  putAt: number;
  /** Staged bytes not durable yet, for the commit of the record to keep (see storeOutput); else null. */
  pending: PendingBlob | null;
  /** Settles once the bytes are durable (at once unless staged), as StagedPut.durable. */
  durable: Promise<number | null>;
}

/** Upload bytes in the blob store whose record is still to be written (storeUpload). */
export interface StoredUpload {
  put: PutResult;
  /** Wall-clock time just after the put (see dropOrphan). */
  putAt: number;
  /** Sniffed from the bytes, else from the file's name. */
  contentType: string;
}

/** Everything the service does with assets. */
export class AssetService {
  private readonly o: AssetServiceOptions;
  /** settlePending calls under way. */
  readonly #settling = new Set<Promise<unknown>>();

  constructor(options: AssetServiceOptions) {
    this.o = options;
  }

  /**
   * Stores uploaded bytes (hashed while they arrive) and creates the caller's record over them;
   * `created`: the caller had no record over these bytes before.
   */
  async upload(owner: string, source: Readable | Uint8Array, meta: UploadMeta): Promise<{ asset: AssetRecord; created: boolean }> {
    // The contract's form is lower-case hex; anything else is refused before a byte is stored.
    if (meta.expected_hash !== undefined && `blake3:${parseBlake3Hash(meta.expected_hash)}` !== meta.expected_hash) {
      throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "expected_hash", reason: "invalid_format" }] });
    }
    if (meta.content_type !== undefined && !isMediaType(meta.content_type)) {
      throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field: "content_type", reason: "invalid_format" }] });
    }
    checkDescription(meta);
    this.o.space?.assertRoom();
    let put;
    try {
      put = await this.o.blobs.put(source, { expectedHash: meta.expected_hash, maxBytes: this.o.maxUploadBytes });
    } catch (err) {
      if (err instanceof HashMismatchError) {
        throw new ServiceError("hash_mismatch", "The uploaded bytes do not match the expected hash.", {
          expected_hash: meta.expected_hash,
          actual_hash: `blake3:${err.actual.replace(/^blake3:/, "")}`,
        });
      }
      if (err instanceof PayloadTooLargeError) throw new ServiceError("payload_too_large", "The request body is too large.");
      throw err;
    }
    // New to the caller unless it already had a record over these bytes: whether another
    // account stored them is never told (a blob is shared, its existence is not).
    const known = !put.created && (await this.o.store.findAssetByBlob(owner, put.key)) !== null;
    const contentType = meta.content_type ?? (await this.sniff(put.key)) ?? mediaTypeFromName(meta.file_path ?? "") ?? "application/octet-stream";
    const now = this.o.now();
    const asset = await this.recordOver(put, {
      id: uuidv7(now),
      owner,
      name: meta.file_path ?? put.key,
      content_type: contentType,
      size_bytes: put.size,
      hash: put.hash,
      blob_key: put.key,
      folder: meta.folder ?? "input",
      file_path: meta.file_path ?? null,
      tags: meta.tags ?? [],
      created_at: now,
      expires_at: now + this.o.retentionMs,
    });
    return { asset, created: !known };
  }

  /**
   * The bytes of an upload whose record is named after them (the hosted interface's flat names):
   * streamed into the blob store, hashed in the same pass, never held whole. Then recordNamed
   * (or discard, when the request fails before its record).
   */
  async storeUpload(source: Readable | Uint8Array, originalName: string | undefined): Promise<StoredUpload> {
    this.o.space?.assertRoom();
    let put: PutResult;
    try {
      put = await this.o.blobs.put(source, { maxBytes: this.o.maxUploadBytes });
    } catch (err) {
      if (err instanceof PayloadTooLargeError) throw new ServiceError("payload_too_large", "The request body is too large.");
      throw err;
    }
    const putAt = Date.now() + 1;
    const contentType = (await this.sniff(put.key)) ?? mediaTypeFromName(originalName ?? "") ?? "application/octet-stream";
    return { put, putAt, contentType };
  }

  /**
   * The caller's record over stored upload bytes under `name` in `folder`, unless it has one
   * there already (the same name always means the same bytes).
   */
  async recordNamed(owner: string, stored: StoredUpload, name: string, folder: AssetFolder): Promise<void> {
    if (await this.findByName(owner, name, folder)) return;
    const now = this.o.now();
    await this.recordOver(
      stored.put,
      {
        id: uuidv7(now),
        owner,
        name,
        content_type: stored.contentType,
        size_bytes: stored.put.size,
        hash: stored.put.hash,
        blob_key: stored.put.key,
        folder,
        file_path: name,
        tags: [],
        created_at: now,
        expires_at: now + this.o.retentionMs,
      },
      stored.putAt,
    );
  }

  /** Upload bytes whose record will never be written: a blob they created that nothing uses goes again. */
  async discardUpload(stored: StoredUpload): Promise<void> {
    await this.dropOrphan(stored.put, stored.putAt).catch(() => undefined);
  }

  /** A new record over a blob the caller may already use; 404 `blob_not_found` otherwise. */
  async fromHash(
    owner: string,
    hash: string,
    meta: { file_path?: string | undefined; tags?: string[] | undefined },
  ): Promise<{ asset: AssetRecord; created: boolean }> {
    const key = parseBlake3Hash(hash);
    const existing = key === null ? null : await this.usableRecord(owner, key);
    if (!existing || key === null || !(await this.o.blobs.has(key))) {
      throw new ServiceError("blob_not_found", "No blob with this hash is available to you.");
    }
    checkDescription(meta);
    const filePath = meta.file_path ?? existing.file_path;
    const tags = meta.tags ?? [];
    if (existing.job_id === null && existing.file_path === filePath && sameTags(existing.tags, tags)) return { asset: existing, created: false };
    const now = this.o.now();
    const asset = await this.o.store.addAsset({
      id: uuidv7(now),
      owner,
      name: filePath ?? key,
      content_type: existing.content_type,
      size_bytes: existing.size_bytes,
      hash: `blake3:${key}`,
      blob_key: key,
      folder: "input",
      file_path: filePath,
      tags,
      created_at: now,
      expires_at: now + this.o.retentionMs,
    });
    return { asset, created: true };
  }

  /** Whether the caller may mint an asset from this hash. */
  async canUseHash(owner: string, hash: string): Promise<boolean> {
    const key = parseBlake3Hash(hash);
    return key !== null && (await this.usableRecord(owner, key)) !== null && (await this.o.blobs.has(key));
  }

  /** The caller's live record over a blob (its proof it may use the blob), or null; expired ones are gone. */
  private async usableRecord(owner: string, key: string): Promise<AssetRecord | null> {
    const asset = await this.o.store.findAssetByBlob(owner, key);
    return asset && (asset.expires_at === null || asset.expires_at > this.o.now()) ? asset : null;
  }

  /** The caller's asset, or 404 `not_found`. */
  async get(owner: string, id: string): Promise<AssetRecord> {
    const asset = await this.o.store.getAsset(id);
    if (!asset || asset.owner !== owner || (asset.expires_at !== null && asset.expires_at <= this.o.now())) throw notFound();
    return asset;
  }

  /** The caller's live asset by ComfyUI-style name within a folder, or null. */
  async findByName(owner: string, name: string, folder: AssetFolder): Promise<AssetRecord | null> {
    const asset = await this.o.store.findAssetByName(owner, name, folder);
    return asset && (asset.expires_at === null || asset.expires_at > this.o.now()) ? asset : null;
  }

  /** Any caller's asset by id (signed links carry their own authorization), or 404. */
  async getUnchecked(id: string): Promise<AssetRecord> {
    const asset = await this.o.store.getAsset(id);
    if (!asset || (asset.expires_at !== null && asset.expires_at <= this.o.now())) throw notFound();
    return asset;
  }

  /** Deletes an uploaded asset; outputs live as long as their job (403 `forbidden`). */
  async delete(owner: string, id: string): Promise<void> {
    const asset = await this.get(owner, id);
    if (asset.job_id !== null) throw new ServiceError("forbidden", "A job's outputs live as long as the job.");
    const gone = await this.o.store.deleteAsset(id);
    if (gone?.blob_unreferenced) await this.o.blobs.delete(gone.blob_key, { unlessTouchedAfter: this.o.now() });
  }

  /**
   * A URL that serves the asset's bytes without this server until `expiresAt` (a presigned GET
   * on the bucket, naming the file and its type), or null when this server serves them (the
   * filesystem store, or proxied downloads).
   */
  async directUrl(asset: AssetRecord, expiresAt: number): Promise<string | null> {
    if (this.o.proxyDownloads === true) return null;
    return this.o.blobs.downloadUrl(asset.blob_key, { expiresAt, fileName: asset.file_path ?? asset.name, contentType: asset.content_type });
  }

  /** The bytes of an asset, whole or a byte range, as a stream. */
  async open(asset: AssetRecord, range?: ByteRange): Promise<Readable> {
    return this.o.blobs.open(asset.blob_key, range);
  }

  /** The bytes of an asset, whole or a byte range, to send: a small one as a buffer, else a stream. */
  async contents(asset: AssetRecord, range?: ByteRange): Promise<Buffer | Readable> {
    return this.o.blobs.contents(asset.blob_key, asset.size_bytes, range);
  }

  /** Commits one output of a running job: blob first, then the record, so a record never points at nothing. */
  async commitOutput(job: { id: string; owner: string; expires_at: number }, file: OutputFile): Promise<AssetRecord> {
    return this.recordOutput(await this.storeOutput(job, file));
  }

  /**
   * The first half of commitOutput: the output's bytes, durable, and the record to write over
   * them (with recordOutput, or in the store's transitionJobWithAssets with the job's end).
   * `stage` stores small bytes without waiting for the disk (BlobStore.stage): the job's end
   * then commits them with the record as `pending`, and recordOutput waits for `durable`.
   * `inline` keeps bytes up to INLINE_BLOB_MAX_BYTES in the record itself (NewAsset.inline): the
   * store is their home (InlineBlobs reads them), nothing is written before the record.
   */
  async storeOutput(
    job: { id: string; owner: string; expires_at: number },
    file: OutputFile,
    options: { stage?: boolean; inline?: boolean } = {},
  ): Promise<StoredOutput> {
    this.o.space?.assertRoom();
    const inline = options.inline === true && file.data.byteLength <= INLINE_BLOB_MAX_BYTES ? file.data : null;
    const staged = options.stage === true && inline === null ? await this.whileUnavailable(() => this.o.blobs.stage(file.data)) : null;
    const put = inline !== null ? await inlinePut(inline) : (staged ?? (await this.whileUnavailable(() => this.o.blobs.put(file.data))));
    // File times are wall-clock whatever clock the service runs on; +1 covers the sub-ms part of
    // our own write's mtime.
    const putAt = Date.now() + 1;
    const now = this.o.now();
    const record: NewAsset = {
      id: uuidv7(now),
      owner: job.owner,
      job_id: job.id,
      node_id: file.node_id,
      name: file.name,
      type: file.type,
      content_type: file.content_type,
      size_bytes: put.size,
      hash: put.hash,
      blob_key: put.key,
      folder: file.folder,
      file_path: file.name,
      created_at: now,
      expires_at: job.expires_at,
      ...(inline !== null ? { inline } : {}),
    };
    const pending = staged?.pending ? { key: put.key, bytes: staged.pending } : null;
    return { record, put, putAt, pending, durable: staged?.durable ?? Promise.resolve(null) };
  }

  /**
   * Runs a blob write again while the blob store is unavailable (an outage of the bucket), once
   * it answers again, for up to outputWaitMs in all: a run outlives a short outage. Other
   * failures, and one that lasts longer, are the caller's.
   */
  private async whileUnavailable<T>(write: () => Promise<T>): Promise<T> {
    const health = this.o.blobHealth;
    const until = performance.now() + (this.o.outputWaitMs ?? OUTPUT_WAIT_MS);
    for (;;) {
      try {
        return await write();
      } catch (err) {
        if (health === undefined || !isDependencyUnavailable(err)) throw err;
        health.noteFailure(err);
        if (!(await health.waitAvailable(until - performance.now()))) throw err;
      }
    }
  }

  /**
   * The second half of commitOutput: the record over the stored bytes, once they are durable (see
   * recordOver). `fence`: written only while the run holds its job (RunFence); `persist`: how the
   * write is retried (a short database outage costs the run nothing); a full disk is not retried.
   */
  async recordOutput(stored: StoredOutput, options: RecordOptions = {}): Promise<AssetRecord> {
    // A staged blob waits for its batch; this record cannot (the run waits for it).
    if (stored.pending !== null) void this.o.blobs.flushStaged();
    return this.recordOver(stored.put, stored.record, await this.ownWriteAt(stored), options);
  }

  /**
   * Staged outputs whose records committed with their bytes kept (transitionJobWithAssets'
   * `pending`): once the files are durable the store forgets the bytes. A failed fsync leaves
   * them kept, for the write-back at the next start (pending-write-back.ts).
   */
  async settlePending(stored: readonly StoredOutput[]): Promise<void> {
    const kept = stored.filter((s) => s.pending !== null);
    if (kept.length === 0) return;
    const settling = Promise.all(kept.map((s) => s.durable)).then(() => this.o.store.dropPendingBlobs(kept.map((s) => s.put.key)));
    this.#settling.add(settling);
    try {
      await settling;
    } finally {
      this.#settling.delete(settling);
    }
  }

  /**
   * Names the staged outputs now and forgets their kept bytes (a clean stop): what a stop leaves
   * behind is only written back at the next start.
   */
  async flushStaged(): Promise<void> {
    await this.o.blobs.flushStaged();
    await Promise.allSettled([...this.#settling]);
  }

  /** Stored outputs whose records will never be written: blobs they created that nothing uses go again. */
  async discardOutputs(stored: readonly StoredOutput[]): Promise<void> {
    if (stored.some((s) => s.pending !== null)) void this.o.blobs.flushStaged();
    for (const s of stored) {
      // Its fsyncs settle before the file may go; one that failed is retried, and the sweep takes what is left.
      const writtenAt = await this.ownWriteAt(s).catch(() => null);
      await this.dropOrphan(s.put, writtenAt).catch(() => undefined);
    }
  }

  /**
   * Once the output's bytes are durable, the time its own write of the blob's file ended (see
   * dropOrphan): a staged blob's file is written by the write-behind after the put, and null
   * when another writer's file holds the bytes.
   */
  private async ownWriteAt(stored: StoredOutput): Promise<number | null> {
    const writtenAt = await stored.durable;
    return stored.pending === null ? stored.putAt : writtenAt;
  }

  /**
   * Adds the record over a blob just put. When the record cannot be written (a full disk), a
   * blob the put created and nothing else uses is removed again: no orphan is left behind.
   */
  private async recordOver(put: PutResult, asset: NewAsset, putAt: number | null = Date.now() + 1, options: RecordOptions = {}): Promise<AssetRecord> {
    const write = () => this.o.store.addAsset(asset, options.fence);
    try {
      return await (options.persist ? options.persist(write, isOutOfSpace) : write());
    } catch (err) {
      await this.dropOrphan(put, putAt);
      throw err;
    }
  }

  /**
   * Removes a blob `put` created if no record uses it, unless a put of the same bytes touched it
   * since `putAt` (its record may be on the way); null `putAt`: another writer's file holds it.
   */
  private async dropOrphan(put: PutResult, putAt: number | null): Promise<void> {
    if (put.created && putAt !== null && !(await this.o.store.blobReferenced(put.key).catch(() => true))) {
      await this.o.blobs.delete(put.key, { unlessTouchedAfter: putAt }).catch(() => false);
    }
  }

  /** Bytes of the caller's asset for the engine (core/ASSET references), or null. */
  async readOwned(owner: string, id: string): Promise<{ bytes: Buffer; hash: string; content_type: string; name: string } | null> {
    const asset = await this.o.store.getAsset(id);
    if (!asset || asset.owner !== owner) return null;
    return { bytes: await this.readAll(asset.blob_key), hash: `blake3:${asset.blob_key}`, content_type: asset.content_type, name: asset.name };
  }

  /** Bytes of the caller's uploaded file by name (hosted LoadImage), or null. */
  async readUploadByName(owner: string, name: string): Promise<{ bytes: Buffer; hash: string } | null> {
    const asset = (await this.o.store.findAssetByName(owner, name, "input")) ?? (await this.o.store.findAssetByName(owner, name));
    if (!asset) return null;
    return { bytes: await this.readAll(asset.blob_key), hash: `blake3:${asset.blob_key}` };
  }

  private async readAll(key: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of await this.o.blobs.open(key)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  private async sniff(key: string): Promise<string | null> {
    const stream = await this.o.blobs.open(key, { start: 0, end: 63 });
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    return sniffMediaType(Buffer.concat(chunks));
  }
}

/** The put an inline output stands for: its name, nothing written (`created` false: no file of its own to drop). */
async function inlinePut(bytes: Uint8Array): Promise<PutResult> {
  const key = await blake3Hex(bytes);
  return { key, hash: toBlake3Hash(key), size: bytes.byteLength, created: false };
}

function sameTags(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}

/** Longest `file_path` an asset may be given. */
export const MAX_FILE_PATH = 1024;
/** Most tags on one asset, and the longest tag. */
export const MAX_TAGS = 64;
export const MAX_TAG_LENGTH = 128;

/** Refuses a description the contract bounds: every GET of the asset returns it. */
function checkDescription(meta: { file_path?: string | undefined; tags?: string[] | undefined }): void {
  const fields: Array<{ field: string; reason: string }> = [];
  if (meta.file_path !== undefined && meta.file_path.length > MAX_FILE_PATH) fields.push({ field: "file_path", reason: "out_of_range" });
  // A NUL names no file (and no PostgreSQL text can hold one).
  else if (meta.file_path?.includes("\0")) fields.push({ field: "file_path", reason: "invalid_format" });
  const tags = meta.tags ?? [];
  if (tags.length > MAX_TAGS || tags.some((t) => t.length > MAX_TAG_LENGTH)) fields.push({ field: "tags", reason: "out_of_range" });
  if (fields.length > 0) throw new ServiceError("invalid_request", "The request is invalid.", { fields });
}

// Content-addressed blobs in an S3-compatible bucket: one object per distinct content, named
// `<prefix><blake3 hex>`. Bytes are hashed while they stream; a small blob goes up in one PUT to
// its name, a large one as a multipart upload under `<prefix>tmp/` that is completed and copied
// to its name only once its hash is known, and aborted (leaving nothing) when those bytes are
// stored already or the upload fails. Downloads are presigned GETs on the bucket.
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { blake3Hex, createBlake3Hasher, isBlake3Hex, toBlake3Hash } from "../domain/blake3.ts";
import { contentDisposition } from "../domain/content-types.ts";
import { checkExpectedHash, checkMaxBytes, checkRange, chunksOf } from "./blob-input.ts";
import { assertBlobKey } from "./blob-key.ts";
import type { BlobSource, BlobStat, BlobStore, ByteRange, DownloadLink, PutOptions, PutResult, StagedPut } from "./blob-store.ts";
import { BlobNotFoundError, BlobUnavailableError, HashMismatchError, PayloadTooLargeError } from "./errors.ts";
import { hostAndPort, networkReason } from "../domain/network-errors.ts";
import { s3Url, type S3Location } from "./s3-location.ts";

/** Options of S3BlobStore.open. */
export interface S3BlobStoreOptions {
  location: S3Location;
  /** Endpoint of an S3-compatible service (MinIO, R2, Ceph RGW, GCS); null = AWS, from the SDK's configuration. */
  endpoint?: string | null;
  /** Path-style addressing (`endpoint/bucket/key`); default: when an endpoint is given. */
  forcePathStyle?: boolean;
  /** Bytes per part of a multipart upload, and the most a put holds at once (default 8 MiB; S3 takes no less than 5 MiB). */
  partBytes?: number;
  /** Attempts per request: throttling (503 SlowDown), 5xx and network failures are retried with backoff (default 5). */
  maxAttempts?: number;
  /** The client to use (tests against another endpoint); else one built the AWS SDK's way (AWS_* variables, profiles). */
  client?: S3Client;
  /** Clock of presigned URLs' signing time (tests sign links in the past). */
  now?: () => number;
  /** Longest wait for one request, the SDK's retries included, before BlobUnavailableError (default 60 s). */
  requestBoundMs?: number;
  /** Longest a put may wait on the bucket across all its requests, before BlobUnavailableError (default 60 s, as one request). */
  putBoundMs?: number;
  /** Longest wait of `check` (readiness), in ms (default 2 s). */
  checkBoundMs?: number;
}

/** See S3BlobStoreOptions.partBytes. */
export const S3_PART_BYTES = 8 * 1024 * 1024;
/** Parts of one upload in flight at once: two keep the link busy while the next part fills. */
const PARTS_IN_FLIGHT = 2;
/**
 * An object's Last-Modified is the bucket's clock, to the second: a put that finds its bytes
 * stored refreshes an object older than half this (a server-side copy onto itself), and a
 * delete `unlessTouchedAfter` T keeps one modified after T minus this, so that neither the
 * clocks' skew nor the second's rounding lets a delete race a put that reuses the object.
 */
export const S3_TOUCH_MARGIN_MS = 10 * 60 * 1000;
/** Temp objects (a crash between completing an upload and copying it) older than this go at open. */
const STALE_TEMP_MS = 24 * 60 * 60 * 1000;
/** See S3BlobStoreOptions.requestBoundMs. */
export const S3_REQUEST_BOUND_MS = 60_000;
/** See S3BlobStoreOptions.putBoundMs. */
export const S3_PUT_BOUND_MS = S3_REQUEST_BOUND_MS;
/** See S3BlobStoreOptions.checkBoundMs. */
export const S3_CHECK_BOUND_MS = 2_000;
/** Longest validity of a SigV4 presigned URL. */
const MAX_PRESIGN_S = 7 * 24 * 60 * 60;

/** Blobs in an S3-compatible bucket. */
export class S3BlobStore implements BlobStore {
  readonly location: S3Location;
  readonly client: S3Client;
  /** The client's `send`, bounded by requestBoundMs. */
  readonly #send: S3Client["send"];
  /** The client's `send`, bounded by checkBoundMs. */
  readonly #probe: S3Client["send"];
  readonly #partBytes: number;
  readonly #now: () => number;
  readonly #requestBoundMs: number;
  readonly #putBoundMs: number;

  /** The endpoint given (null: AWS's own, by region), for messages. */
  readonly #endpoint: string | null;

  private constructor(
    location: S3Location,
    client: S3Client,
    partBytes: number,
    now: () => number,
    endpoint: string | null,
    bounds: [request: number, check: number, put: number],
  ) {
    this.location = location;
    this.#endpoint = endpoint;
    this.client = client;
    this.#send = boundedSend(client, bounds[0]);
    this.#probe = boundedSend(client, bounds[1]);
    this.#requestBoundMs = bounds[0];
    this.#putBoundMs = bounds[2];
    this.#partBytes = partBytes;
    this.#now = now;
  }

  /** A store on the bucket; checks nothing yet (a bucket down at start is a readiness failure, not a crash). */
  static async open(options: S3BlobStoreOptions): Promise<S3BlobStore> {
    const partBytes = options.partBytes ?? S3_PART_BYTES;
    if (!Number.isSafeInteger(partBytes) || partBytes < 5 * 1024 * 1024) throw new RangeError("partBytes must be at least 5 MiB");
    const endpoint = options.endpoint ?? null;
    const client =
      options.client ??
      new S3Client({
        ...(endpoint === null ? {} : { endpoint }),
        forcePathStyle: options.forcePathStyle ?? endpoint !== null,
        maxAttempts: options.maxAttempts ?? 5,
        retryMode: "standard",
        // A bucket that stops answering fails requests (500 upstream_error, readiness 503) instead of
        // holding them; each request is bounded as a whole too (boundedSend), retries included.
        requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
      });
    const bounds: [number, number, number] = [
      options.requestBoundMs ?? S3_REQUEST_BOUND_MS,
      options.checkBoundMs ?? S3_CHECK_BOUND_MS,
      options.putBoundMs ?? S3_PUT_BOUND_MS,
    ];
    const store = new S3BlobStore(options.location, client, partBytes, options.now ?? Date.now, endpoint, bounds);
    store.removeStaleTemps().catch(() => undefined); // housekeeping only: a bucket down now is seen by readiness
    return store;
  }

  /** `s3://bucket/prefix`. */
  get url(): string {
    return s3Url(this.location);
  }

  /** The object key of a blob: its hex under the prefix; InvalidBlobKeyError on a bad key. */
  objectKey(key: string): string {
    assertBlobKey(key);
    return `${this.location.prefix}${key}`;
  }

  /**
   * Streams bytes into the bucket while hashing them, holding at most a few parts; see PutOptions
   * for the refusals. The time it waits on the bucket, all its requests together, is bounded by
   * putBoundMs (time waiting for the source's bytes is not counted).
   */
  async put(source: BlobSource, options: PutOptions = {}): Promise<PutResult> {
    return this.#put(source, options, new BucketBudget(this.#putBoundMs));
  }

  async #put(source: BlobSource, options: PutOptions, budget: BucketBudget): Promise<PutResult> {
    const expectedHex = checkExpectedHash(options.expectedHash);
    const maxBytes = checkMaxBytes(options.maxBytes);
    if (source instanceof Uint8Array) return this.#putBuffer(source, expectedHex, maxBytes, budget);
    const send = boundedSend(this.client, this.#requestBoundMs, budget);
    // The name is known before the bytes: stored already, they are only hashed (checked), never
    // sent; else a large upload goes up under its name, completed only once the hash matched.
    const known = expectedHex !== null && (await budget.charge(() => this.#reuse(expectedHex, send)));
    const hasher = await createBlake3Hasher();
    let size = 0;
    const part: Uint8Array[] = [];
    let partSize = 0;
    let upload: Multipart | null = null;
    // Part buffers are reused once sent (at most PARTS_IN_FLIGHT + 1 per put): a long upload
    // allocates no new memory per part, so its footprint stays flat rather than waiting on GC.
    const free: Buffer[] = [];
    const takePart = (): Buffer => {
      const bytes = free.pop() ?? Buffer.allocUnsafe(this.#partBytes);
      for (let at = 0; at < bytes.length; ) {
        const chunk = part[0]!;
        const n = Math.min(chunk.byteLength, bytes.length - at);
        bytes.set(n === chunk.byteLength ? chunk : chunk.subarray(0, n), at);
        at += n;
        if (n === chunk.byteLength) part.shift();
        else part[0] = chunk.subarray(n);
      }
      partSize -= bytes.length;
      return bytes;
    };
    try {
      for await (const chunk of chunksOf(source)) {
        size += chunk.byteLength;
        if (maxBytes !== null && size > maxBytes) throw new PayloadTooLargeError(maxBytes);
        hasher.update(chunk);
        if (known) continue;
        part.push(chunk);
        partSize += chunk.byteLength;
        while (partSize >= this.#partBytes) {
          upload ??= await budget.charge(() =>
            Multipart.start(send, this.location.bucket, expectedHex === null ? `${this.location.prefix}tmp/${randomUUID()}` : this.objectKey(expectedHex)),
          );
          const bytes = takePart();
          const adding = upload;
          await budget.charge(() => adding.add(bytes, () => free.push(bytes)));
        }
      }
      const key = hasher.digestHex();
      if (expectedHex !== null && key !== expectedHex) throw new HashMismatchError(toBlake3Hash(expectedHex), toBlake3Hash(key));
      if (known) return { key, hash: toBlake3Hash(key), size, created: false };
      if (upload === null) return await this.#putSmall(key, Buffer.concat(part, partSize), budget);
      const last = upload;
      await budget.charge(async () => {
        if (partSize > 0) await last.add(Buffer.concat(part, partSize));
        await last.drain();
      });
      if (expectedHex !== null) {
        await budget.charge(() => last.complete()); // under its own name already: nothing to copy
        upload = null;
        return { key, hash: toBlake3Hash(key), size, created: true };
      }
      const multipart = upload;
      upload = null;
      // Stored already: the parts are dropped, no object was ever made.
      if (await budget.charge(() => this.#reuse(key, send))) {
        // Parts an abort could not drop are no object either; a bucket lifecycle rule
        // (AbortIncompleteMultipartUpload) clears them.
        await multipart.abort().catch(() => undefined);
        return { key, hash: toBlake3Hash(key), size, created: false };
      }
      await budget.charge(() => multipart.complete());
      try {
        await budget.charge(() =>
          send(new CopyObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key), CopySource: copySource(this.location.bucket, multipart.key) })),
        );
      } finally {
        await this.#deleteObject(multipart.key).catch(() => undefined); // else removed at a later open, once stale
      }
      return { key, hash: toBlake3Hash(key), size, created: true };
    } catch (error) {
      await upload?.abort().catch(() => undefined);
      throw error;
    }
  }

  /** A buffer is hashed first: bytes already stored cost a HEAD. */
  async #putBuffer(bytes: Uint8Array, expectedHex: string | null, maxBytes: number | null, budget: BucketBudget): Promise<PutResult> {
    if (maxBytes !== null && bytes.byteLength > maxBytes) throw new PayloadTooLargeError(maxBytes);
    const key = await blake3Hex(bytes);
    if (expectedHex !== null && key !== expectedHex) throw new HashMismatchError(toBlake3Hash(expectedHex), toBlake3Hash(key));
    if (bytes.byteLength > this.#partBytes) return this.#put(chunked(bytes, this.#partBytes), {}, budget);
    return this.#putSmall(key, bytes, budget);
  }

  /**
   * One PUT to the blob's name unless it is stored already (a HEAD), both within `budget`; S3's
   * PUT is atomic, so a reader never sees part of it.
   */
  async #putSmall(key: string, bytes: Uint8Array, budget: BucketBudget): Promise<PutResult> {
    const send = boundedSend(this.client, this.#requestBoundMs, budget);
    const result = { key, hash: toBlake3Hash(key), size: bytes.byteLength };
    if (await budget.charge(() => this.#reuse(key, send))) return { ...result, created: false };
    await budget.charge(() =>
      send(new PutObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key), Body: bytes, ContentLength: bytes.byteLength })),
    );
    return { ...result, created: true };
  }

  /** Whether the blob is stored; an old one is touched (see S3_TOUCH_MARGIN_MS). */
  async #reuse(key: string, send: S3Client["send"] = this.#send): Promise<boolean> {
    const head = await this.#head(this.objectKey(key), send);
    if (head === null) return false;
    if (Date.now() - head.mtimeMs > S3_TOUCH_MARGIN_MS / 2) {
      const Key = this.objectKey(key);
      await send(
        new CopyObjectCommand({
          Bucket: this.location.bucket,
          Key,
          CopySource: copySource(this.location.bucket, Key),
          MetadataDirective: "REPLACE",
          Metadata: { touched: String(Date.now()) },
        }),
      );
    }
    return true;
  }

  /** Stores a buffer durably at once: nothing is kept pending (there is no write-behind here). */
  async stage(bytes: Uint8Array): Promise<StagedPut> {
    return { ...(await this.#putBuffer(bytes, null, null, new BucketBudget(this.#putBoundMs))), pending: null, durable: Promise.resolve(null) };
  }

  /** Nothing is ever staged. */
  async flushStaged(): Promise<void> {}

  /** Writes kept bytes back (a blob staged on a filesystem store before a switch); false when they do not hash to `key`. */
  async restore(key: string, bytes: Uint8Array): Promise<boolean> {
    if ((await blake3Hex(bytes)) !== key) return false;
    await this.#send(new PutObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key), Body: bytes, ContentLength: bytes.byteLength }));
    return true;
  }

  putBytes(bytes: Uint8Array, options: PutOptions = {}): Promise<PutResult> {
    return this.put(bytes, options);
  }

  async has(key: string): Promise<boolean> {
    return (await this.stat(key)) !== null;
  }

  async stat(key: string): Promise<BlobStat | null> {
    return this.#head(this.objectKey(key));
  }

  async open(key: string, range: ByteRange = {}): Promise<Readable> {
    const { start, end } = checkRange(range);
    const Range = start === undefined && end === undefined ? undefined : end === undefined ? `bytes=${start}-` : `bytes=${start ?? 0}-${end}`;
    try {
      const out = await this.#send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key), ...(Range ? { Range } : {}) }));
      return out.Body as Readable;
    } catch (error) {
      if (isNotFound(error)) throw new BlobNotFoundError(key);
      // A range past the end of a blob reads as empty, as a file's does.
      if (statusOf(error) === 416) return Readable.from([]);
      throw error;
    }
  }

  /** Always a stream: a GET costs the same whatever its size. */
  async contents(key: string, _size: number, range: ByteRange = {}): Promise<Buffer | Readable> {
    return this.open(key, range);
  }

  async delete(key: string, options: { unlessTouchedAfter?: number } = {}): Promise<boolean> {
    const objectKey = this.objectKey(key);
    const head = await this.#head(objectKey);
    if (head === null) return false;
    if (options.unlessTouchedAfter !== undefined && head.mtimeMs > options.unlessTouchedAfter - S3_TOUCH_MARGIN_MS) return false;
    await this.#deleteObject(objectKey);
    return true;
  }

  async *keys(): AsyncGenerator<string> {
    for await (const object of this.#list(this.location.prefix, "/")) {
      const name = object.key.slice(this.location.prefix.length);
      if (isBlake3Hex(name)) yield name;
    }
  }

  /**
   * Rejects, saying what is wrong in words an operator can act on: the client's configuration
   * (no region, no credentials), or the bucket that cannot be reached or does not answer within
   * checkBoundMs (readiness answers in that bound, whatever the bucket does).
   */
  async check(): Promise<void> {
    try {
      await this.#probe(new HeadBucketCommand({ Bucket: this.location.bucket }));
    } catch (err) {
      throw new Error(this.#checkFailure(err), { cause: err });
    }
  }

  #checkFailure(err: unknown): string {
    const message = (err as Error).message ?? String(err);
    // The SDK's configuration, read from the environment: nothing was sent.
    if (/region is missing/i.test(message)) return "object storage needs a region: set AWS_REGION (for example us-east-1; R2: auto)";
    if ((err as Error).name === "CredentialsProviderError") {
      return "object storage needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or an instance role)";
    }
    const where = this.#endpoint === null ? "AWS S3" : hostAndPort(this.#endpoint, this.#endpoint.startsWith("https:") ? 443 : 80);
    const status = statusOf(err);
    const why =
      err instanceof BlobUnavailableError
        ? message.replace(/^object storage /, "")
        : (networkReason(err) ?? (status === 404 ? "no such bucket" : status === 403 ? "access denied: check the credentials" : message));
    return `cannot reach object storage at ${where} (bucket ${this.location.bucket}: ${why}); check --blob-store and --s3-endpoint`;
  }

  /**
   * A presigned GET of the blob valid until `link.expiresAt` (at most 7 days, SigV4's bound),
   * naming the file and its type for the browser; signed locally, no request is made.
   */
  async downloadUrl(key: string, link: DownloadLink): Promise<string> {
    const signingDate = new Date(Math.floor(this.#now() / 1000) * 1000);
    const expiresIn = Math.max(1, Math.min(MAX_PRESIGN_S, Math.floor((link.expiresAt - signingDate.getTime()) / 1000)));
    const command = new GetObjectCommand({
      Bucket: this.location.bucket,
      Key: this.objectKey(key),
      ResponseContentType: link.contentType,
      ResponseContentDisposition: contentDisposition(link.fileName, link.contentType),
    });
    return getSignedUrl(this.client, command, { expiresIn, signingDate });
  }

  /** Releases the client's sockets. */
  async close(): Promise<void> {
    this.client.destroy();
  }

  /** Removes temp objects older than a day: a crash between completing an upload and copying it left them. */
  private async removeStaleTemps(): Promise<void> {
    const cutoff = Date.now() - STALE_TEMP_MS;
    for await (const object of this.#list(`${this.location.prefix}tmp/`)) {
      if (object.mtimeMs < cutoff) await this.#deleteObject(object.key);
    }
  }

  async *#list(prefix: string, delimiter?: string): AsyncGenerator<{ key: string; mtimeMs: number }> {
    let token: string | undefined;
    do {
      const page = await this.#send(
        new ListObjectsV2Command({
          Bucket: this.location.bucket,
          Prefix: prefix,
          ...(delimiter ? { Delimiter: delimiter } : {}),
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, mtimeMs: o.LastModified?.getTime() ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async #head(objectKey: string, send: S3Client["send"] = this.#send): Promise<BlobStat | null> {
    try {
      const head = await send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: objectKey }));
      return { size: head.ContentLength ?? 0, mtimeMs: head.LastModified?.getTime() ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async #deleteObject(objectKey: string): Promise<void> {
    await this.#send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: objectKey }));
  }
}

/** One multipart upload under way: parts go up a few at a time, in order of their numbers. */
class Multipart {
  readonly key: string;
  readonly #send: S3Client["send"];
  readonly #bucket: string;
  readonly #uploadId: string;
  readonly #parts: CompletedPart[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #failure: unknown = null;

  private constructor(send: S3Client["send"], bucket: string, key: string, uploadId: string) {
    this.#send = send;
    this.#bucket = bucket;
    this.key = key;
    this.#uploadId = uploadId;
  }

  static async start(send: S3Client["send"], bucket: string, key: string): Promise<Multipart> {
    const created = await send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    if (!created.UploadId) throw new Error("the bucket gave no UploadId");
    return new Multipart(send, bucket, key, created.UploadId);
  }

  /** Sends the next part (`release` runs once the bytes are no longer needed); resolves once a slot is free for the one after (a failure of any part rejects). */
  async add(bytes: Uint8Array, release: () => void = () => undefined): Promise<void> {
    if (this.#failure !== null) throw this.#failure;
    const PartNumber = this.#parts.length + 1;
    this.#parts.push({ PartNumber });
    const sent = this.#send(
      new UploadPartCommand({ Bucket: this.#bucket, Key: this.key, UploadId: this.#uploadId, PartNumber, Body: bytes, ContentLength: bytes.byteLength }),
    )
      .then(
        (out) => void (this.#parts[PartNumber - 1] = { PartNumber, ETag: out.ETag }),
        (error: unknown) => void (this.#failure ??= error),
      )
      .finally(() => {
        this.#inFlight.delete(sent);
        release();
      });
    this.#inFlight.add(sent);
    while (this.#inFlight.size >= PARTS_IN_FLIGHT) await Promise.race(this.#inFlight);
    if (this.#failure !== null) throw this.#failure;
  }

  /** Waits for every part; rejects when one failed. */
  async drain(): Promise<void> {
    await Promise.all(this.#inFlight);
    if (this.#failure !== null) throw this.#failure;
  }

  async complete(): Promise<void> {
    await this.#send(
      new CompleteMultipartUploadCommand({ Bucket: this.#bucket, Key: this.key, UploadId: this.#uploadId, MultipartUpload: { Parts: this.#parts } }),
    );
  }

  /** Drops the upload and its parts: no object is made. */
  async abort(): Promise<void> {
    await Promise.allSettled(this.#inFlight);
    await this.#send(new AbortMultipartUploadCommand({ Bucket: this.#bucket, Key: this.key, UploadId: this.#uploadId }));
  }
}

/**
 * What one operation (a put) may still wait on the bucket, across its requests: only the time it
 * spends awaiting them is charged, not the time it waits for its source's bytes.
 */
class BucketBudget {
  readonly boundMs: number;
  #spentMs = 0;
  constructor(boundMs: number) {
    this.boundMs = boundMs;
  }

  /** Milliseconds left. */
  left(): number {
    return this.boundMs - this.#spentMs;
  }

  /** Awaits `wait` (requests to the bucket), charging its time; none left: BlobUnavailableError. */
  async charge<T>(wait: () => Promise<T>): Promise<T> {
    if (this.left() <= 0) throw this.#spent();
    const started = performance.now();
    try {
      return await wait();
    } finally {
      this.#spentMs += performance.now() - started;
    }
  }

  #spent(): BlobUnavailableError {
    return new BlobUnavailableError(`object storage did not take the upload within ${this.boundMs / 1000} s`);
  }
}

/**
 * The client's `send` bounded as a whole (the SDK's retries included): past `boundMs`, or past
 * what `budget` has left when it starts, the request is aborted and BlobUnavailableError says so.
 * The timer ends with the answer, so the body of a GET streams for as long as it takes.
 */
function boundedSend(client: S3Client, requestBoundMs: number, budget?: BucketBudget): S3Client["send"] {
  return (async (command: Parameters<S3Client["send"]>[0]) => {
    const boundMs = Math.max(0, Math.min(requestBoundMs, budget?.left() ?? requestBoundMs));
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), boundMs);
    try {
      return await client.send(command as never, { abortSignal: controller.signal });
    } catch (err) {
      if (controller.signal.aborted) {
        const within = boundMs < requestBoundMs && budget ? `take the upload within ${budget.boundMs / 1000} s` : `answer within ${boundMs / 1000} s`;
        throw new BlobUnavailableError(`object storage did not ${within}`, { cause: err });
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }) as S3Client["send"];
}

/** A buffer as chunks of at most `size` bytes (a large output goes up as a multipart upload). */
async function* chunked(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size);
}

function copySource(bucket: string, key: string): string {
  return `${bucket}/${key.split("/").map(encodeURIComponent).join("/")}`;
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === "NotFound" || name === "NoSuchKey" || statusOf(error) === 404;
}

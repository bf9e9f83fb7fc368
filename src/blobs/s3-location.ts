// `s3://bucket/prefix`: where an S3 blob store keeps its objects.

/** A bucket and the key prefix of the blobs in it ("" or ending in "/"). */
export interface S3Location {
  bucket: string;
  prefix: string;
}

/** Bucket names as S3 allows them (3-63 lowercase letters, digits, dots and hyphens). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Parses `s3://bucket[/prefix]`; an Error that says what is wrong otherwise. */
export function parseS3Url(url: string): S3Location {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(url.trim());
  if (!m) throw new Error(`--blob-store must be s3://bucket/prefix, got "${url}"`);
  const bucket = m[1]!;
  if (!BUCKET.test(bucket)) throw new Error(`--blob-store: "${bucket}" is not a valid bucket name (3-63 lowercase letters, digits, dots, hyphens)`);
  const path = (m[2] ?? "").replace(/^\/+|\/+$/g, "");
  if (/\/\/|(^|\/)\.\.?(\/|$)/.test(path)) throw new Error(`--blob-store: the prefix "${path}" has an empty, . or .. segment`);
  return { bucket, prefix: path === "" ? "" : `${path}/` };
}

/** The location as `s3://bucket/prefix`, for the start-up line. */
export function s3Url(location: S3Location): string {
  return `s3://${location.bucket}/${location.prefix}`;
}

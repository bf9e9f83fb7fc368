// `s3://bucket/prefix` as --blob-store takes it: a valid bucket name, a prefix of clean segments.
import { describe, expect, it } from "vitest";
import { parseS3Url, s3Url } from "../../src/blobs/index.ts";

describe("parseS3Url", () => {
  it("takes a bucket and an optional prefix, which always ends in /", () => {
    expect(parseS3Url("s3://media")).toEqual({ bucket: "media", prefix: "" });
    expect(parseS3Url("s3://media/")).toEqual({ bucket: "media", prefix: "" });
    expect(parseS3Url("s3://media/prod/blobs")).toEqual({ bucket: "media", prefix: "prod/blobs/" });
    expect(s3Url(parseS3Url("s3://media/prod/"))).toBe("s3://media/prod/");
  });

  it("refuses what is not a bucket and a clean prefix", () => {
    for (const bad of ["media", "http://media/x", "s3://", "s3://Media", "s3://ab", "s3://-media", "s3://media/a//b", "s3://media/../x", "s3://media/a/./b"]) {
      expect(() => parseS3Url(bad), bad).toThrow(/--blob-store/);
    }
  });
});

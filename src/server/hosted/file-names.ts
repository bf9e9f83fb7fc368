// File names of the hosted interface: flat, content-addressed storage, and names that can
// never leave the store (no separators, no `..`, nothing absolute).
import { extensionFor } from "../../engine/index.ts";
import { ServiceError } from "../../domain/errors.ts";

/** The stored name of uploaded bytes: the same bytes always get the same name. */
export function contentName(blake3Hash: string, contentType: string, originalName: string | undefined): string {
  const hex = blake3Hash.replace(/^blake3:/, "");
  const fromName = /\.([A-Za-z0-9]{1,8})$/.exec(originalName ?? "")?.[1]?.toLowerCase();
  const ext = extensionFor(contentType) ?? fromName ?? "bin";
  return `${hex.slice(0, 32)}.${ext}`;
}

/** Refuses a filename or subfolder that could escape the store (400 `invalid_request`). */
export function assertSafeName(value: string, field: string, allowEmpty: boolean): void {
  const bad =
    (!allowEmpty && value.length === 0) ||
    value.length > 1024 ||
    value.includes("\0") ||
    value.startsWith("/") ||
    value.startsWith("\\") ||
    /^[A-Za-z]:/.test(value) ||
    value.split(/[\\/]/).some((seg) => seg === ".." || seg === ".");
  if (bad) throw new ServiceError("invalid_request", "The request is invalid.", { fields: [{ field, reason: "unsafe_path" }] });
}

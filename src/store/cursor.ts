// Listing cursors: opaque to callers, a position in seq order to the store.
import { InvalidCursorError } from "./errors.ts";

const PREFIX = "s1:";

/** Encodes the seq of the last job of a page as an opaque cursor. */
export function encodeCursor(seq: number): string {
  return Buffer.from(PREFIX + seq, "utf8").toString("base64url");
}

/** Decodes a cursor to the seq to continue below; InvalidCursorError when it is not one of ours. */
export function decodeCursor(cursor: string): number {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(cursor)) throw new InvalidCursorError();
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const match = /^s1:([1-9]\d{0,15})$/.exec(text);
  const seq = Number(match?.[1]);
  if (!match || !Number.isSafeInteger(seq) || encodeCursor(seq) !== cursor) throw new InvalidCursorError();
  return seq;
}

// Errors the engine raises, and the mapping of any failure to a JobError that is safe to show.
import { type ComfyExecutionDetails, WORKFLOW_FAILED, type JobErrorCode } from "../domain/failures.ts";
import { OutOfMemoryError } from "./run-scope.ts";

/** JobError.code values (the spec's known values; docs/decisions.md, "Job error codes"). */
export type { ComfyExecutionDetails, JobErrorCode };

/** The execution failure carried in job.error. */
export interface JobError {
  code: JobErrorCode;
  message: string;
  node_id: string | null;
  class_type: string | null;
  traceback: string | null;
  /** ComfyUI's execution_error fields as it sent them (paths and secrets removed), for the hosted socket and history; never in a v2 answer. */
  comfy?: ComfyExecutionDetails;
}

/** A failed run: carries the JobError to store on the job. */
export class EngineError extends Error {
  readonly jobError: JobError;

  constructor(jobError: JobError, options?: { cause?: unknown }) {
    super(jobError.message, options);
    this.name = "EngineError";
    this.jobError = jobError;
  }

  /** Shorthand for jobError.code. */
  get code(): JobErrorCode {
    return this.jobError.code;
  }
}

/** A run stopped because its AbortSignal fired; never a failure of the graph. */
export class ExecutionCancelledError extends Error {
  /** The node that was running when the cancel took effect, if any. */
  readonly node_id: string | null;

  constructor(nodeId: string | null = null) {
    super("Execution was cancelled");
    this.name = "ExecutionCancelledError";
    this.node_id = nodeId;
  }
}

/** Thrown by a node that rejects its inputs at run time (maps to invalid_input). */
export class NodeInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NodeInputError";
  }
}

/** Thrown by a node that needs a model file the engine does not have (maps to missing_model). */
export class MissingModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MissingModelError";
  }
}

/** Thrown by a partner node when the vendor call fails (maps to partner_node_error). */
export class PartnerNodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PartnerNodeError";
  }
}

/** True for the errors AbortSignal-aware code throws when aborted. */
export function isAbortError(err: unknown): boolean {
  return err instanceof ExecutionCancelledError || (err instanceof Error && (err.name === "AbortError" || (err as { code?: unknown }).code === "ABORT_ERR"));
}

/** Maps a node's failure to a JobError; strips paths and every given secret. */
export function toJobError(err: unknown, node: { node_id: string; class_type: string } | null, secrets: readonly string[]): JobError {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = codeFor(e);
  const message = redact(stripPaths(e.message || e.name), secrets) || "Node failed";
  return {
    code,
    message,
    node_id: node?.node_id ?? null,
    class_type: node?.class_type ?? null,
    traceback: sanitizeTraceback(e.stack ?? `${e.name}: ${e.message}`, secrets),
  };
}

function codeFor(e: Error): JobErrorCode {
  if (e instanceof NodeInputError) return "invalid_input";
  if (e instanceof MissingModelError) return "missing_model";
  if (e instanceof PartnerNodeError) return "partner_node_error";
  if (e instanceof EngineError) return e.code;
  if (e instanceof OutOfMemoryError) return "out_of_memory";
  // V8's allocation failures for typed arrays and buffers.
  if (e instanceof RangeError && /allocation failed|invalid typed array length|array buffer|out of memory/i.test(e.message)) {
    return "out_of_memory";
  }
  return WORKFLOW_FAILED.code;
}

/**
 * Stack text safe to show: the call chain without source locations (no paths, file names or
 * line numbers of the server's code), node internals dropped, and secrets replaced.
 */
export function sanitizeTraceback(stack: string, secrets: readonly string[]): string {
  const lines = stripPaths(stack)
    .split("\n")
    .filter((line) => !/^\s*at .*\bnode:/.test(line))
    .map((line) => line.replace(/^(\s*at [^(]*?)\s*\([^)]*\)\s*$/, "$1").replace(/^(\s*at )[^\s()]+:\d+:\d+\s*$/, "$1<anonymous>"));
  return redact(lines.join("\n"), secrets);
}

// file:// URLs, POSIX absolute paths and Windows drive paths, up to the last separator; a path
// starts a word (so "node:internal/process/x" is left alone).
const PATH_PATTERN = /(?<=^|[\s("'=<[])(?:file:\/\/\/?)?(?:[A-Za-z]:[\\/]|\/)(?:[^\s()'"\\/:]+[\\/])+/gm;

/** Removes directory parts of every absolute path or file URL in the text. */
export function stripPaths(text: string): string {
  return text.replace(PATH_PATTERN, "");
}

/** Replaces each secret (at least 4 characters long) with a fixed marker. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join("[redacted]");
  return out;
}

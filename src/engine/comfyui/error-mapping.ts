// ComfyUI's failures in flowgate's terms: an execution_error becomes a JobError, the 400 of
// POST /prompt becomes the same ValidationResult the submission-time validation produces.
import type { ComfyErrorItem, ComfyNodeErrors, ComfyValidationError } from "../comfy-errors.ts";
import { redact, sanitizeTraceback, stripPaths, type JobError, type JobErrorCode } from "../errors.ts";
import type { FieldError, ValidationReason, ValidationResult } from "../validate.ts";

/** exception_type -> job error code; anything else is node_execution_error. */
function codeOf(exceptionType: string, apiNode: boolean): JobErrorCode {
  const name = exceptionType.split(".").pop() ?? "";
  if (/OutOfMemory|^OOM/i.test(name)) return "out_of_memory";
  // Whatever a partner node raised, the failure is the partner call's.
  if (name === "InsufficientFundsError" || name === "InactiveSubscriptionError" || apiNode) return "partner_node_error";
  if (name === "ModelDownloadError") return "missing_model";
  if (name === "ValidationError" || name === "ImageDownloadError") return "invalid_input";
  return "node_execution_error";
}

/** The JobError of an execution_error (message or history), with paths and secrets removed. */
export function jobErrorOf(data: Record<string, unknown>, isApiNode: (classType: string) => boolean, secrets: readonly string[]): JobError {
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  const nodeId = str(data.node_id) ?? (typeof data.node_id === "number" ? String(data.node_id) : null);
  const classType = str(data.node_type);
  const exceptionType = str(data.exception_type) ?? "";
  const message = redact(stripPaths(str(data.exception_message) ?? ""), secrets).trim() || "The workflow failed on ComfyUI.";
  const tb = Array.isArray(data.traceback) ? data.traceback.map(String).join("") : str(data.traceback);
  const frames = Array.isArray(data.traceback) ? data.traceback.map((f) => sanitizeTraceback(String(f), secrets)) : tb ? [sanitizeTraceback(tb, secrets)] : [];
  // Inputs may hold a hidden input filled from extra_data (a partner key): secrets are removed.
  const scrub = (v: unknown): unknown =>
    v === undefined
      ? undefined
      : JSON.parse(
          redact(
            JSON.stringify(v),
            secrets.map((s) => JSON.stringify(s).slice(1, -1)),
          ),
        );
  return {
    code: codeOf(exceptionType, classType !== null && isApiNode(classType)),
    message,
    node_id: nodeId,
    class_type: classType,
    traceback: tb ? sanitizeTraceback(tb, secrets) : null,
    comfy: {
      exception_type: exceptionType,
      traceback: frames,
      // ComfyUI's JSON as it sent it: its inputs by name and a list of node ids.
      current_inputs: (scrub(data.current_inputs) as Record<string, unknown> | undefined) ?? {},
      current_outputs: (scrub(data.current_outputs) as string[] | undefined) ?? [],
      executed: Array.isArray(data.executed) ? data.executed.map(String) : [],
    },
  };
}

const REASONS: Record<string, ValidationReason> = {
  required_input_missing: "missing_input",
  missing_node_type: "unknown_class",
  bad_linked_input: "bad_link",
  return_type_mismatch: "type_mismatch",
  invalid_input_type: "type_mismatch",
  value_smaller_than_min: "out_of_range",
  value_bigger_than_max: "out_of_range",
  value_not_in_list: "not_in_options",
  prompt_no_outputs: "no_output_node",
};

/** ComfyUI's words for an error item: its message and details; a node's own check (custom_validation_failed) by its details, without the class prefix. */
function wordsOf(item: Partial<ComfyErrorItem>, classType: string | null): string {
  const message = String(item.message ?? "").trim();
  const details = String(item.details ?? "").trim();
  if (item.type === "custom_validation_failed" && details) {
    return classType && details.startsWith(`${classType} - `) ? details.slice(classType.length + 3) : details;
  }
  return [message, details].filter((t) => t.length > 0).join(": ");
}

/** ComfyUI's item as flowgate's, with ComfyUI's own words as the message. */
function fieldError(item: Partial<ComfyErrorItem>, classType: string | null = null): FieldError {
  const words = wordsOf(item, classType);
  return { ...reasonOf(item), ...(words ? { message: words.length > 500 ? `${words.slice(0, 497)}...` : words } : {}) };
}

function reasonOf(item: Partial<ComfyErrorItem>): FieldError {
  const type = String(item.type ?? "");
  const extra = (item.extra_info ?? {}) as Record<string, unknown>;
  const input = typeof extra.input_name === "string" ? extra.input_name : "";
  if (type === "missing_node_type") return { field: "class_type", reason: "unknown_class" };
  if (type === "exception_during_validation") {
    if (/cycle/i.test(String(item.details ?? "")) || /Cycle/.test(String(extra.exception_type ?? ""))) return { field: "", reason: "cycle" };
    if (/KeyError|IndexError/.test(String(extra.exception_type ?? ""))) return { field: input, reason: "bad_link" };
  }
  return { field: input, reason: REASONS[type] ?? "bad_node" };
}

/**
 * The job error of a prompt ComfyUI refused: its first node error as ComfyUI said it (the input
 * named when ComfyUI's words do not), with that node's id and class; a graph-level refusal has neither.
 */
export function jobErrorOfRefusal(v: ValidationResult): JobError {
  const nodes = v.comfy?.node_errors ?? {};
  for (const [id, errors] of Object.entries(v.node_errors)) {
    const first = errors[0];
    if (id === "" || !first) continue;
    const reason = first.message ?? first.reason;
    // ComfyUI names the input first in its details ("images", "ckpt_name: 'x' not in [...]"); a node's own check does not.
    const field = first.field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const named = first.field && !new RegExp(`(^|: )${field}($|[:,])`).test(reason) ? `${reason} (input ${first.field})` : reason;
    return { code: "invalid_input", message: `ComfyUI refused the prompt: ${named}`, node_id: id, class_type: nodes[id]?.class_type ?? null, traceback: null };
  }
  const error = v.comfy?.error;
  const reason = error ? wordsOf(error, null) : "";
  return { code: "invalid_input", message: `ComfyUI refused the prompt: ${reason || "invalid prompt"}`, node_id: null, class_type: null, traceback: null };
}

/** ComfyUI's POST /prompt 400 body as a ValidationResult (flowgate's shape and ComfyUI's own). */
export function validationOfComfy400(body: unknown): ValidationResult {
  const b = (typeof body === "object" && body !== null ? body : {}) as { error?: unknown; node_errors?: unknown };
  const error: ComfyErrorItem =
    typeof b.error === "object" && b.error !== null
      ? { type: "invalid_prompt", message: "Invalid prompt", details: "", extra_info: {}, ...(b.error as Partial<ComfyErrorItem>) }
      : { type: "invalid_prompt", message: typeof b.error === "string" ? b.error : "Invalid prompt", details: "", extra_info: {} };
  const nodeErrors: Record<string, FieldError[]> = {};
  const comfyNodes: Record<string, ComfyNodeErrors> = {};
  if (typeof b.node_errors === "object" && b.node_errors !== null && !Array.isArray(b.node_errors)) {
    for (const [id, entry] of Object.entries(b.node_errors as Record<string, unknown>)) {
      const e = (entry ?? {}) as Partial<ComfyNodeErrors>;
      const items = Array.isArray(e.errors) ? (e.errors as Partial<ComfyErrorItem>[]) : [];
      const classType = typeof e.class_type === "string" ? e.class_type : null;
      nodeErrors[id] = items.length > 0 ? items.map((i) => fieldError(i, classType)) : [{ field: "", reason: "bad_node" }];
      comfyNodes[id] = {
        errors: items.map((i) => ({
          type: String(i.type ?? ""),
          message: String(i.message ?? ""),
          details: String(i.details ?? ""),
          extra_info: (i.extra_info ?? {}) as Record<string, unknown>,
        })),
        dependent_outputs: Array.isArray(e.dependent_outputs) ? e.dependent_outputs.map(String) : [],
        class_type: typeof e.class_type === "string" ? e.class_type : null,
      };
    }
  }
  // A graph-level error (no outputs, a bad prompt) has no node entry; it is keyed "".
  if (Object.keys(nodeErrors).length === 0) nodeErrors[""] = [fieldError(error)].map((f) => ({ ...f, field: "" }));
  const comfy: ComfyValidationError = { error, node_errors: comfyNodes };
  return { valid: false, node_errors: nodeErrors, comfy, output_nodes: [] };
}

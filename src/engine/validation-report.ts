// The report of a graph's analysis: the public result with both error shapes (flowgate's
// {field, reason} per node and ComfyUI's POST /prompt error body), and a one-line summary.
import { comfyError, type ComfyNodeErrors, type ComfyValidationError } from "./comfy-errors.ts";
import type { Analysis, FieldError, ValidationResult } from "./analysis.ts";

/** Turns an analysis into the public result with both error shapes. */
export function validationResult(analysis: Analysis): ValidationResult {
  const valid = analysis.issues.length === 0;
  // Keyed by client node ids, which may be any string ("__proto__", "valueOf"): no prototype.
  const nodeErrors: Record<string, FieldError[]> = Object.create(null);
  for (const i of analysis.issues) (nodeErrors[i.node_id] ??= []).push({ field: i.field, reason: i.reason, ...(i.message ? { message: i.message } : {}) });
  return {
    valid,
    node_errors: nodeErrors,
    comfy: valid ? null : comfyShape(analysis),
    output_nodes: valid ? [...analysis.outputs] : [],
  };
}

/** ComfyUI's error body: its first error, and every node's errors with the outputs that depend on it. */
function comfyShape(analysis: Analysis): ComfyValidationError {
  const nodeErrors: Record<string, ComfyNodeErrors> = Object.create(null);
  for (const i of analysis.issues) {
    if (i.node_id === "") continue;
    const entry = (nodeErrors[i.node_id] ??= {
      errors: [],
      dependent_outputs: [...(analysis.dependents.get(i.node_id) ?? [])],
      class_type: analysis.classTypes.get(i.node_id) ?? null,
    });
    entry.errors.push(i.comfy);
  }
  const graphLevel = analysis.issues.find((i) => i.node_id === "");
  const missingType = analysis.issues.find((i) => i.comfy.type === "missing_node_type");
  // ComfyUI stops at the first missing class, then at "no outputs"; we still list every node error.
  const error =
    graphLevel?.comfy.type === "invalid_prompt"
      ? graphLevel.comfy
      : missingType
        ? missingType.comfy
        : graphLevel
          ? graphLevel.comfy
          : comfyError.promptOutputsFailedValidation(analysis.issues.map((i) => `${i.comfy.message}: ${i.comfy.details}`));
  return { error, node_errors: nodeErrors };
}

/** A one-line summary of the errors, for logs and error messages. */
export function describeErrors(result: ValidationResult): string {
  const parts = Object.entries(result.node_errors).map(
    ([id, errs]) => `${id === "" ? "graph" : `node ${id}`}: ${errs.map((e) => (e.field ? `${e.field} ${e.reason}` : e.reason)).join(", ")}`,
  );
  return parts.length ? `Invalid workflow (${parts.join("; ")})` : "Valid workflow";
}

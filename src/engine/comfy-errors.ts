// ComfyUI's validation error items and the body its POST /prompt answers with on failure.
import type { InputSpec, InputType } from "./node-spec.ts";
import { pyRepr, pyStr } from "./python.ts";

/** One error as ComfyUI reports it. */
export interface ComfyErrorItem {
  type: string;
  message: string;
  details: string;
  extra_info: Record<string, unknown>;
}

/** ComfyUI's per-node error entry. */
export interface ComfyNodeErrors {
  errors: ComfyErrorItem[];
  dependent_outputs: string[];
  class_type: string | null;
}

/** The 400 body of ComfyUI's POST /prompt for an invalid prompt. */
export interface ComfyValidationError {
  error: ComfyErrorItem;
  node_errors: Record<string, ComfyNodeErrors>;
}

/** How ComfyUI prints an input type in messages: a name, or a Python list of options. */
export function typeText(type: InputType): string {
  return typeof type === "string" ? type : pyRepr(type);
}

/** Builders for each error type ComfyUI's validate_prompt / validate_inputs produce. */
export const comfyError = {
  invalidPrompt(message: string): ComfyErrorItem {
    return { type: "invalid_prompt", message, details: "", extra_info: {} };
  },
  missingClassType(nodeId: string, title: string | undefined): ComfyErrorItem {
    return {
      type: "missing_node_type",
      message: `Node '${title ?? `ID #${nodeId}`}' has no class_type. The workflow may be corrupted or a custom node is missing.`,
      details: `Node ID '#${nodeId}'`,
      extra_info: { node_id: nodeId, class_type: null, node_title: title ?? null },
    };
  },
  missingNodeType(nodeId: string, classType: string, title: string | undefined): ComfyErrorItem {
    const shown = title ?? classType;
    return {
      type: "missing_node_type",
      message: `Node '${shown}' not found. The custom node may not be installed.`,
      details: `Node ID '#${nodeId}'`,
      extra_info: { node_id: nodeId, class_type: classType, node_title: shown },
    };
  },
  promptNoOutputs(): ComfyErrorItem {
    return { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} };
  },
  requiredInputMissing(input: string): ComfyErrorItem {
    return { type: "required_input_missing", message: "Required input is missing", details: input, extra_info: { input_name: input } };
  },
  badLinkedInput(input: string, spec: InputSpec, value: unknown): ComfyErrorItem {
    return {
      type: "bad_linked_input",
      message: "Bad linked input, must be a length-2 list of [node_id, slot_index]",
      details: input,
      extra_info: { input_name: input, input_config: spec, received_value: value },
    };
  },
  /** A link to a node or output slot that does not exist: a KeyError or IndexError inside ComfyUI. */
  exceptionDuringValidation(exceptionType: string, text: string): ComfyErrorItem {
    return {
      type: "exception_during_validation",
      message: "Exception when validating node",
      details: text,
      extra_info: { exception_type: exceptionType, traceback: [] },
    };
  },
  returnTypeMismatch(input: string, spec: InputSpec, received: string, link: unknown): ComfyErrorItem {
    return {
      type: "return_type_mismatch",
      message: "Return type mismatch between linked nodes",
      details: `${input}, ${received} != ${typeText(spec[0])}`,
      extra_info: { input_name: input, input_config: spec, received_type: received, linked_node: link },
    };
  },
  invalidInputType(input: string, spec: InputSpec, value: unknown, reason: string): ComfyErrorItem {
    return {
      type: "invalid_input_type",
      message: `Failed to convert an input value to a ${typeText(spec[0])} value`,
      details: `${input}, ${pyStr(value)}, ${reason}`,
      extra_info: { input_name: input, input_config: spec, received_value: value, exception_message: reason },
    };
  },
  valueSmallerThanMin(input: string, spec: InputSpec, value: unknown, min: unknown, show: (n: unknown) => string): ComfyErrorItem {
    return {
      type: "value_smaller_than_min",
      message: `Value ${show(value)} smaller than min of ${show(min)}`,
      details: input,
      extra_info: { input_name: input, input_config: spec, received_value: value },
    };
  },
  valueBiggerThanMax(input: string, spec: InputSpec, value: unknown, max: unknown, show: (n: unknown) => string): ComfyErrorItem {
    return {
      type: "value_bigger_than_max",
      message: `Value ${show(value)} bigger than max of ${show(max)}`,
      details: input,
      extra_info: { input_name: input, input_config: spec, received_value: value },
    };
  },
  valueNotInList(input: string, spec: InputSpec, value: unknown, options: readonly unknown[]): ComfyErrorItem {
    // Like ComfyUI, long lists (model folders) are not echoed back.
    const long = options.length > 20;
    return {
      type: "value_not_in_list",
      message: "Value not in list",
      details: `${input}: '${pyStr(value)}' not in ${long ? `(list of length ${options.length})` : pyRepr(options)}`,
      extra_info: { input_name: input, input_config: long ? null : spec, received_value: value },
    };
  },
  /** ComfyUI finds cycles when it builds the execution list (graph.DependencyCycleError). */
  dependencyCycle(): ComfyErrorItem {
    return {
      type: "exception_during_validation",
      message: "Exception when validating node",
      details: "Dependency cycle detected",
      extra_info: { exception_type: "graph.DependencyCycleError", traceback: [] },
    };
  },
  /** A node's own check refused its inputs (ComfyUI: VALIDATE_INPUTS returned a message). */
  customValidationFailed(input: string, reason: string): ComfyErrorItem {
    return {
      type: "custom_validation_failed",
      message: "Custom validation failed for node",
      details: input ? `${input} - ${reason}` : reason,
      extra_info: { input_name: input },
    };
  },
  promptOutputsFailedValidation(lines: string[]): ComfyErrorItem {
    return { type: "prompt_outputs_failed_validation", message: "Prompt outputs failed validation", details: lines.join("\n"), extra_info: {} };
  },
};

// What graph validation learns, shared by its parts: the plan (graph-plan.ts), the node checks
// (node-checks.ts, size-checks.ts), the analysis that runs them (validate.ts) and the report
// (validation-report.ts).
import type { AssetRef } from "./asset-refs.ts";
import type { ComfyErrorItem, ComfyValidationError } from "./comfy-errors.ts";
import type { NodeDefinition } from "./node-spec.ts";

/** flowgate's validation reasons (docs/decisions.md, "Graph validation"). */
export type ValidationReason =
  | "missing_input"
  | "unknown_class"
  | "bad_link"
  | "type_mismatch"
  | "out_of_range"
  | "not_in_options"
  | "cycle"
  | "no_output_node"
  | "bad_node";

/** One problem with one field of one node. */
export interface FieldError {
  field: string;
  reason: ValidationReason;
  /** What is wrong, for people: with "did you mean" where a name looks mistyped. */
  message?: string;
}

/** The outcome of validate(): both error shapes, and the output nodes found. */
export interface ValidationResult {
  valid: boolean;
  /** node id ("" for the graph as a whole) -> its errors. Empty when valid. */
  node_errors: Record<string, FieldError[]>;
  /** ComfyUI's POST /prompt error body, or null when valid. */
  comfy: ComfyValidationError | null;
  /** Ids of the output nodes that would run. */
  output_nodes: string[];
}

/** A file input as written in the graph. */
export type FileRef = { kind: "upload"; name: string } | { kind: "asset"; ref: AssetRef };

/** A node ready to run: coerced literals, links and file references. */
export interface PreparedNode {
  id: string;
  class_type: string;
  def: NodeDefinition;
  literals: Record<string, unknown>;
  links: Record<string, { from: string; index: number }>;
  files: Record<string, FileRef>;
}

/** One validation finding in both shapes. */
export interface Issue {
  node_id: string;
  field: string;
  reason: ValidationReason;
  comfy: ComfyErrorItem;
  message: string;
}

/** Everything validation learns about a graph. */
export interface Analysis {
  issues: Issue[];
  outputs: string[];
  nodes: Map<string, PreparedNode>;
  /** Output nodes and their ancestors, dependencies first; empty when there is a cycle. */
  order: string[];
  /** node id -> the output nodes that depend on it. */
  dependents: Map<string, string[]>;
  classTypes: Map<string, string | null>;
}

/** What validation checks beyond the graph itself. */
export interface AnalyzeOptions {
  /** The per-run memory budget: a node whose known tensor sizes exceed it is out_of_range. */
  jobMemoryBytes?: number;
}

/** Records one error: its reason, ComfyUI's item, a sentence for people and an optional hint (a "did you mean"). */
export type Report = (node_id: string, field: string, reason: ValidationReason, comfy: ComfyErrorItem, message: string, hint?: string) => void;

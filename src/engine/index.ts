// Public surface of the workflow engine. The engine knows nothing of jobs or HTTP.
export type {
  ActivityEvent,
  AssetResolver,
  Engine,
  EngineOutput,
  ExecuteOptions,
  ExecuteResult,
  LogEvent,
  NodeDoneEvent,
  NodeEvent,
  OutputSummary,
  OutputType,
  PreviewEvent,
  ProgressEvent,
  RecordedTimes,
  ResolvedAsset,
  StartEvent,
  UiDict,
  UploadResolver,
} from "./engine.ts";
export { EngineBusyError, EngineUnavailableError } from "./engine.ts";
export { ComfyUIEngine, type ComfyUIEngineOptions } from "./comfyui/index.ts";
export { EmbeddedEngine, EngineValidationError, type EmbeddedEngineOptions } from "./embedded-engine.ts";
export {
  EngineError,
  ExecutionCancelledError,
  isAbortError,
  MissingModelError,
  NodeInputError,
  PartnerNodeError,
  sanitizeTraceback,
  type JobError,
  type JobErrorCode,
} from "./errors.ts";
export { findAssetReferences, isAssetObject, parseAssetRef, type AssetRef, type AssetReference } from "./asset-refs.ts";
export { isUiFormat, type ApiGraph, type ApiNode } from "./graph.ts";
export { describeErrors, type FieldError, type ValidationReason, type ValidationResult } from "./validate.ts";
export type { ComfyErrorItem, ComfyNodeErrors, ComfyValidationError } from "./comfy-errors.ts";
export type { NodeInfo, ObjectInfo } from "./object-info.ts";
export type { NodeDefinition, NodeContext, NodeResult, NodeFile } from "./node-spec.ts";
export { extensionFor, sniff, type Sniffed } from "./media/sniff.ts";

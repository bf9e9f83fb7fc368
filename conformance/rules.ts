// The contract's rule IDs as data: the shared groups written by hand from CONTRACT-RULES.md (the
// shared contract notes; test/conformance/rules.test.ts fails when the two drift apart), then the
// project's own extension groups (rules of the contract's later minor versions that
// CONTRACT-RULES.md does not hold), kept apart so that the mirror stays a mirror.

/** One testable rule of the contract. */
export interface Rule {
  id: string;
  group: string;
  text: string;
}

/** Rule groups in the order of CONTRACT-RULES.md, with their titles. */
export const SHARED_GROUPS: Readonly<Record<string, string>> = {
  GEN: "General",
  JOB: "Job",
  LOG: "Logs",
  PRG: "Progress",
  OUT: "Output",
  JERR: "Job error",
  URL: "Follow-up URLs",
  ST: "States",
  SUB: "Submit",
  IDEM: "Idempotency",
  GET: "Read a job",
  CAN: "Cancel",
  SSE: "Event stream",
  AST: "Assets",
  AUTH: "Authentication",
  ERR: "Errors",
  HOST: "Hosted interface",
  WS: "Hosted WebSocket",
  VER: "Versioning",
};

/** Every rule of CONTRACT-RULES.md. */
export const SHARED_RULES: readonly Rule[] = [
  {
    id: "GEN-1",
    group: "GEN",
    text: "A workflow is an API-format graph: a JSON object keyed by node id, each node `{class_type, inputs}`; an input is a literal or a link `[source_node_id, output_index]`.",
  },
  { id: "GEN-2", group: "GEN", text: "A UI export (an object with `nodes` and `links` arrays) is rejected with 422 `workflow_format_ui`." },
  {
    id: "GEN-3",
    group: "GEN",
    text: "Polling first: every v2 capability is reachable with plain GET; the SSE stream is never the only way to learn anything.",
  },
  { id: "GEN-4", group: "GEN", text: "Resumable: a job's status and outputs are retrievable by id until its `expires_at`." },
  { id: "GEN-5", group: "GEN", text: "Responses embed follow-up URLs (`urls.*`, `outputs[].url`) and a client only follows them." },
  { id: "GEN-6", group: "GEN", text: "The same v2 contract holds on self-hosted, hosted cloud and serverless surfaces." },
  { id: "GEN-7", group: "GEN", text: "v2 has no saved workflows, model library, node introspection or named parameters." },
  {
    id: "GEN-8",
    group: "GEN",
    text: "Hosted cloud: running requires an active subscription; the tier sets how many jobs run at once; further jobs queue automatically.",
  },
  { id: "GEN-9", group: "GEN", text: "Partner nodes get the caller's key from `extra_data.api_key_vendor_org`." },
  {
    id: "JOB-1",
    group: "JOB",
    text: "Required fields, always present (nullable ones as `null`, never omitted): `id` (UUID), `status`, `created_at`, `started_at`, `completed_at`, `expires_at`, `queue_position`, `progress`, `outputs`, `error`, `urls`.",
  },
  { id: "JOB-2", group: "JOB", text: "Date-times are RFC 3339." },
  { id: "JOB-3", group: "JOB", text: "A job is durable from creation until `expires_at` (it survives a server restart)." },
  { id: "JOB-4", group: "JOB", text: "`outputs` fills incrementally: an output committed mid-run is visible on GET before the job ends." },
  {
    id: "JOB-5",
    group: "JOB",
    text: "`metrics`, when present, maps names to integer or `null`; it includes `queue_ms` and `execution_ms`; a metric not yet known is `null`, never omitted (`execution_ms` before the job runs).",
  },
  { id: "JOB-6", group: "JOB", text: "`queue_position` is an integer while queued and `null` otherwise (Open: base and scope)." },
  { id: "JOB-7", group: "JOB", text: "`started_at` is set when the job leaves `queued` for `running`; `completed_at` when it reaches a terminal state." },
  { id: "LOG-1", group: "LOG", text: "Only serverless surfaces carry `logs`; on hosted cloud and self-hosted it is always absent." },
  { id: "LOG-2", group: "LOG", text: "Where populated, the log is captured for every job, succeeded or failed, and lives exactly as long as the job." },
  {
    id: "LOG-3",
    group: "LOG",
    text: "`logs` is absent, never `null`, when there is none (surface doesn't populate it, job not finished, job predates capture, demo deployment).",
  },
  { id: "LOG-4", group: "LOG", text: "The public demo deployment accepts callers with no credential, captures the log and withholds it on read." },
  {
    id: "LOG-5",
    group: "LOG",
    text: "`logs` appears only on `GET /api/v2/jobs/{id}`: never on `POST /api/v2/jobs`, `POST .../cancel`, or the SSE `status` event.",
  },
  {
    id: "LOG-6",
    group: "LOG",
    text: "JobLogs has `text`, `truncated`, `captured_at`, all required; `text` is the workflow code's standard output in write order, untrusted, to be rendered as plain text.",
  },
  {
    id: "LOG-7",
    group: "LOG",
    text: "Capture is bounded: the tail is kept and `truncated` is true; `truncated` true with empty `text` means captured and then shed entirely.",
  },
  {
    id: "PRG-1",
    group: "PRG",
    text: "Progress has `value` (double, 0..1 inclusive), `nodes_done`, `nodes_total` (integers), optional nullable `current_node`, `current_node_class`, `step`, `steps`, `message`.",
  },
  { id: "PRG-2", group: "PRG", text: "It is server-computed, weighted by node count and sampler step." },
  { id: "PRG-3", group: "PRG", text: "Each snapshot is complete and alone resynchronizes a client." },
  { id: "PRG-4", group: "PRG", text: "The SSE stream pushes the same Progress data as `job.progress`." },
  {
    id: "OUT-1",
    group: "OUT",
    text: "Required: `node_id`, `name`, `type`, `content_type`, `size_bytes`, `id` (asset UUID), `hash` (nullable, `blake3:<hex>`), `url` (URI), `url_expires_at`; optional nullable `job_id`.",
  },
  {
    id: "OUT-2",
    group: "OUT",
    text: "`type` is one of `image`, `video`, `audio`, `text`, `file`, `latent`; every output kind is normalized into one, none silently dropped.",
  },
  { id: "OUT-3", group: "OUT", text: "An output's `id` is retrievable with `GET /api/v2/assets/{id}` while the job is retained." },
  { id: "OUT-4", group: "OUT", text: "`hash` may be `null` (computed lazily); when set it is the blake3 of the bytes that `url` serves." },
  { id: "OUT-5", group: "OUT", text: "`url` serves exactly `size_bytes` bytes of `content_type` until `url_expires_at`." },
  {
    id: "JERR-1",
    group: "JERR",
    text: "An execution failure sets status `failed` and `error` `{code, message, node_id?, class_type?, traceback?}`; it is never an HTTP error.",
  },
  { id: "JERR-2", group: "JERR", text: "`error` is `null` unless the job failed." },
  { id: "URL-1", group: "URL", text: "`urls` has `self`, `events`, `cancel`; each is an absolute URL or a host-relative reference starting with `/`." },
  {
    id: "URL-2",
    group: "URL",
    text: "A host-relative link already includes the prefix the surface is mounted under (e.g. `/deployment/{deployment_id}/api/v2`).",
  },
  {
    id: "URL-3",
    group: "URL",
    text: "A client resolves a host-relative link against the request origin (scheme + authority), never against a configured base URL.",
  },
  {
    id: "ST-1",
    group: "ST",
    text: "Status is one of `queued`, `running`, `succeeded`, `canceling`, `canceled`, `failed`, `expired`; terminal: `succeeded`, `canceled`, `failed`, `expired`.",
  },
  { id: "ST-2", group: "ST", text: "A successful submission creates the job in `queued` (201)." },
  {
    id: "ST-3",
    group: "ST",
    text: "Only these moves happen: queued→running, running→succeeded, running→failed, running→expired, running→canceling (cancel request), canceling→canceled; plus the Open move for a cancel of a queued job.",
  },
  { id: "ST-4", group: "ST", text: "A terminal status never changes." },
  { id: "SUB-1", group: "SUB", text: "Body `{workflow, extra_data?}`; `workflow` is an object accepted verbatim with arbitrary properties." },
  { id: "SUB-2", group: "SUB", text: "`extra_data` is closed: only `api_key_vendor_org` (string); any other key is rejected." },
  { id: "SUB-3", group: "SUB", text: "Reserved fields `webhook_url` and `inputs` are rejected when present (Open: status and code)." },
  { id: "SUB-4", group: "SUB", text: "Synchronous validation covers graph structure, unknown node classes and asset references." },
  { id: "SUB-5", group: "SUB", text: "201 returns the Job without `logs`." },
  { id: "SUB-6", group: "SUB", text: "Invalid graph: 422 `invalid_workflow` with `details.node_errors`: node id → list of `{field, reason}`." },
  { id: "SUB-7", group: "SUB", text: "A `core/ASSET` reference whose `id` does not exist or is not the caller's: 422 `missing_asset`." },
  { id: "SUB-8", group: "SUB", text: "Bounded queue: at the bound, 429 `queue_full` with `Retry-After`." },
  {
    id: "SUB-9",
    group: "SUB",
    text: "Deployment-scoped surfaces: 429 `deployment_not_ready` (with `Retry-After`) while provisioning/starting; 422 `deployment_stopped` when stopped.",
  },
  { id: "SUB-10", group: "SUB", text: "402 `insufficient_credits` only on hosted cloud and serverless." },
  {
    id: "SUB-11",
    group: "SUB",
    text: "`extra_data` reaches the worker for that submission and is never persisted: it appears in no response, record, log or file.",
  },
  { id: "IDEM-1", group: "IDEM", text: "The first request presenting an `Idempotency-Key` is processed normally." },
  {
    id: "IDEM-2",
    group: "IDEM",
    text: "Every later request with the same key gets 422 `idempotency_key_reuse` and is never executed: a retry, a concurrent duplicate, and a different body alike.",
  },
  { id: "IDEM-3", group: "IDEM", text: "A key is claimed only by a request that reaches submission." },
  {
    id: "IDEM-4",
    group: "IDEM",
    text: "The key is released when submission definitively fails without creating a job (validation error, out of credits, queue full): a retry with the same key proceeds.",
  },
  { id: "IDEM-5", group: "IDEM", text: "When the outcome is unknown (upstream timeout or 5xx), the key stays claimed." },
  { id: "IDEM-6", group: "IDEM", text: "Keys expire after 24 hours." },
  { id: "IDEM-7", group: "IDEM", text: "No response replay, no `Idempotency-Replayed` header." },
  { id: "IDEM-8", group: "IDEM", text: "`extra_data` is excluded from any idempotency comparison." },
  {
    id: "GET-1",
    group: "GET",
    text: "`GET /api/v2/jobs/{id}` returns the full Job: status, latest progress, every output committed so far, and `logs` where LOG rules allow; an unknown id is 404 `not_found`.",
  },
  { id: "GET-2", group: "GET", text: "Another caller's job is not visible to the caller (Open: 403 or 404)." },
  { id: "CAN-1", group: "CAN", text: "`POST /api/v2/jobs/{id}/cancel` returns the current Job (without `logs`)." },
  { id: "CAN-2", group: "CAN", text: "Canceling a running job moves it to `canceling`, then `canceled`." },
  { id: "CAN-3", group: "CAN", text: "(Open) Cancel of a queued job, and of a terminal job." },
  { id: "SSE-1", group: "SSE", text: "`GET /api/v2/jobs/{id}/events` is `text/event-stream`; frames carry no `id:` field and there is no resume cursor." },
  { id: "SSE-2", group: "SSE", text: "A `status` event is pushed on every transition to every open stream, carrying the job without `logs`." },
  { id: "SSE-3", group: "SSE", text: "The stream pushes the same Progress data as `job.progress`." },
  { id: "SSE-4", group: "SSE", text: "Frames emitted while a client was disconnected are lost; GET is the source of truth." },
  { id: "AST-1", group: "AST", text: "`GET /api/v2/assets/{id}` returns the asset record for an output's `id` while the job is retained." },
  { id: "AST-2", group: "AST", text: "A workflow references an asset with a `core/ASSET` object whose `id` must exist and be owned by the caller." },
  {
    id: "AST-3",
    group: "AST",
    text: "Assets are UUID records over content-addressed blobs; the blob key is a server-computed blake3 hash, nullable and possibly computed lazily.",
  },
  { id: "AST-4", group: "AST", text: "(Open) Upload, hash checks (`hash_mismatch` 409, `blob_not_found` 404) and listing a caller's jobs." },
  { id: "AUTH-1", group: "AUTH", text: "v2 uses `Authorization: Bearer <API_KEY>`; keys are account-scoped on hosted cloud and serverless." },
  { id: "AUTH-2", group: "AUTH", text: "Self-hosted accepts unauthenticated requests by default and can be configured with one static bearer token." },
  { id: "AUTH-3", group: "AUTH", text: "The v2 contract allows operations without credentials; the public demo deployment takes callers with none." },
  { id: "AUTH-4", group: "AUTH", text: "Missing or invalid credentials: 401 `unauthorized`. Authenticated but not allowed: 403 `forbidden`." },
  { id: "AUTH-5", group: "AUTH", text: "Hosted interface: `X-API-Key` on REST calls; the WebSocket takes the key in query parameter `token`." },
  { id: "AUTH-6", group: "AUTH", text: "The same key serves partner-node calls via `extra_data.api_key_vendor_org`." },
  { id: "ERR-1", group: "ERR", text: "Every v2 error body is `{error: {code, message, details?}}` with string `code` and `message`." },
  { id: "ERR-2", group: "ERR", text: "Each code has exactly the status of the seed's table (`invalid_workflow` 422 … `upstream_error` 500)." },
  { id: "ERR-3", group: "ERR", text: "A 429 is told apart by `error.code` alone; every 429 carries `Retry-After` as an integer number of seconds." },
  { id: "ERR-4", group: "ERR", text: "`upstream_error` messages are generic and safe to display: no stack, path, SQL or upstream text." },
  { id: "ERR-5", group: "ERR", text: "Any operation can fail with 500 `upstream_error`, and a client must handle it." },
  { id: "HOST-1", group: "HOST", text: "`GET /api/object_info`: node definitions keyed by class name, each with `input.required`." },
  { id: "HOST-2", group: "HOST", text: "`POST /api/upload/image` (multipart `image`, `type`, `overwrite`) returns `{name, subfolder}`." },
  {
    id: "HOST-3",
    group: "HOST",
    text: "`POST /api/upload/mask` (multipart `image`, `type`, `subfolder` ignored, `original_ref` JSON string) returns `{name, subfolder}`; storage is flat and content-addressed.",
  },
  { id: "HOST-4", group: "HOST", text: "`POST /api/prompt` `{prompt, extra_data?}` returns `{prompt_id}`; an `error` field may be present." },
  {
    id: "HOST-5",
    group: "HOST",
    text: "`GET /api/job/{prompt_id}/status` returns `{status}`; terminal values `success`, `error`, `non_retryable_error`, `lost`, `cancelled`; any other value is in flight.",
  },
  {
    id: "HOST-6",
    group: "HOST",
    text: "`GET /api/view?filename&subfolder&type` answers 302 to a signed URL that carries its own authorization and serves the bytes; a client fetches it without the API key.",
  },
  {
    id: "HOST-7",
    group: "HOST",
    text: "`GET /api/queue` returns `queue_running` and `queue_pending` arrays; `POST /api/queue {delete:[ids]}` cancels those jobs, pending or running.",
  },
  { id: "HOST-8", group: "HOST", text: "`POST /api/interrupt` interrupts the caller's running job." },
  {
    id: "HOST-9",
    group: "HOST",
    text: "Errors: 400 invalid request, 401 bad or missing key, 402 insufficient credits, 429 inactive subscription (not backpressure), 500 internal.",
  },
  { id: "HOST-10", group: "HOST", text: "Multipart uploads are accepted with a client-set boundary." },
  {
    id: "WS-1",
    group: "WS",
    text: "`GET /ws?clientId=<uuid>&token=<key>` upgrades; `clientId` is ignored and every connection of a user gets the same messages.",
  },
  { id: "WS-2", group: "WS", text: "Text frames are JSON `{type, data}`; `data.prompt_id` identifies the job." },
  {
    id: "WS-3",
    group: "WS",
    text: "Types: `status` (`queue_remaining`), `notification` (`value`), `execution_start`, `executing` (`node`; empty means end), `progress` (`value`, `max`), `progress_state` (`nodes`), `executed` (`node`, `output` with `images`/`video`/`audio` file infos), `execution_cached` (`nodes`), `execution_success`, `execution_error` (`exception_type`, `exception_message`, `traceback`), `execution_interrupted`.",
  },
  {
    id: "WS-4",
    group: "WS",
    text: "`execution_error.exception_type` is one of `ValidationError`, `ModelDownloadError`, `ImageDownloadError`, `OOMError`, `InsufficientFundsError`, `InactiveSubscriptionError`.",
  },
  {
    id: "WS-5",
    group: "WS",
    text: "Binary frames, big-endian: PREVIEW_IMAGE (1: type, image_type 1 JPEG / 2 PNG, bytes), TEXT (3: type, node_id_len, node id, text), PREVIEW_IMAGE_WITH_METADATA (4: type, metadata_len, JSON metadata `node_id`, `display_node_id`, `real_node_id`, `prompt_id`, `parent_node_id`, image bytes).",
  },
  {
    id: "WS-6",
    group: "WS",
    text: "A file info is `{filename, subfolder, type}` with `type` `output` (final), `temp` (preview) or `input` (uploaded), and `/api/view` serves it.",
  },
  { id: "VER-1", group: "VER", text: "The v2 contract is version 2.0.0; changes within v2 are additive only." },
  { id: "VER-2", group: "VER", text: "The hosted interface is experimental and carries no compatibility guarantee." },
];

/** The project's extension groups: rules of spec/openapi.yaml beyond CONTRACT-RULES.md (the v2 contract's later minor versions, the hosted interface's newer ComfyUI routes). */
export const EXTENSION_GROUPS: Readonly<Record<string, string>> = {
  LBL: "Labels (contract 2.1)",
  SDK: "The official SDK's listing items, cursor errors and logs resource (contract 2.2)",
  HJOB: "Hosted job API (ComfyUI's /api/jobs)",
  LNK: "The created resource's Location and links (additive to 2.x)",
};

/** Rules of the extension groups, from spec/openapi.yaml (2.1.0: job labels, issue #37; 2.2.0: the official SDK's listing and logs, issue #50; the hosted job API, issues #45 and #43). */
export const EXTENSION_RULES: readonly Rule[] = [
  {
    id: "LBL-1",
    group: "LBL",
    text: "`POST /api/v2/jobs` takes an optional `metadata`: at most 16 pairs, keys of 1 to 40 characters from `A-Z a-z 0-9 _ - .`, values strings of at most 256 characters; a map within these bounds (at them included) is accepted (201).",
  },
  {
    id: "LBL-2",
    group: "LBL",
    text: "A `metadata` map outside its bounds (more than 16 pairs, an empty, too long or ill-formed key, a value too long or not a string) is 422 `metadata_invalid`, with the offending key in `details.key` (null when the map as a whole is wrong).",
  },
  {
    id: "LBL-3",
    group: "LBL",
    text: "Labels are returned as submitted on every view of the job: the POST answer, GET, cancel, the list entries and the SSE `status` event; `{}` when the submission had none.",
  },
  {
    id: "LBL-4",
    group: "LBL",
    text: "`GET /api/v2/jobs?metadata[key]=value` lists only the caller's jobs carrying every given label (up to 3 filters, all must match), combined with `status` and cursor paging, newest first.",
  },
  {
    id: "LBL-5",
    group: "LBL",
    text: "A malformed label filter (an empty or ill-formed key, more than 3 filters, a repeated key, a value longer than 256 characters) is 400 `invalid_metadata_filter`.",
  },
  {
    id: "LBL-6",
    group: "LBL",
    text: "A surface may decline labels: it then answers a submission carrying a non-empty `metadata`, and a listing filtered by label, with 422 `metadata_not_supported`, and still accepts submissions without labels.",
  },
  {
    id: "LBL-7",
    group: "LBL",
    text: "Labels take part in the idempotency comparison like the rest of the body: a reused key with other labels is refused with 422 `idempotency_key_reuse` and creates no job.",
  },
  {
    id: "SDK-1",
    group: "SDK",
    text: "Each job of `GET /api/v2/jobs` carries, beside the full job, `create_time` (its `created_at`), `update_time` (its last change, RFC 3339, not before its creation or its end) and `deployment_id` (the deployment on serverless, `null` elsewhere).",
  },
  {
    id: "SDK-2",
    group: "SDK",
    text: "A listing `cursor` the server did not issue is 400 `invalid_cursor` in the envelope.",
  },
  {
    id: "SDK-3",
    group: "SDK",
    text: "Where the surface serves logs, every job view links `urls.logs`; its GET answers a finished job's JobLogs `{text, truncated, captured_at, complete}` (`complete` true), the same log `GET /api/v2/jobs/{id}` embeds.",
  },
  {
    id: "SDK-4",
    group: "SDK",
    text: "`GET /api/v2/jobs/{id}/logs` answers 204 without a body where there is no log to show (a job not finished; every job on a surface that serves no logs, whose jobs carry no `urls.logs`), and 404 `not_found` for an unknown job.",
  },
  // ComfyUI's current job API on the hosted interface (issue #45) and a client's prompt_id (issue #43).
  {
    id: "HJOB-1",
    group: "HJOB",
    text: "`GET /api/jobs` lists the caller's prompts (pending, running and those still in the history) as `{jobs, pagination: {offset, limit, total, has_more}}`, each job with ComfyUI's fields (`id`, `status`, `priority`, `create_time`, `execution_start_time`, `execution_end_time`, `outputs_count`, ...), without its graph.",
  },
  {
    id: "HJOB-2",
    group: "HJOB",
    text: "`status` (a comma list of `pending`, `in_progress`, `completed`, `failed`, `cancelled`) filters the list, `sort_by` (`created_at`, `execution_duration`, or `create_time`, `execution_time`) and `sort_order` order it, `limit` and `offset` page it without overlap, `has_more` telling whether jobs follow.",
  },
  {
    id: "HJOB-3",
    group: "HJOB",
    text: "A bad `status`, `sort_by`, `sort_order`, `limit` or `offset` is 400 with ComfyUI's `{error}` string.",
  },
  {
    id: "HJOB-4",
    group: "HJOB",
    text: "`GET /api/jobs/{id}` returns the full job: `workflow.prompt` as queued and `extra_data` without secrets, and once finished `outputs` and `execution_status`; an id the caller has no job under is 404.",
  },
  {
    id: "HJOB-5",
    group: "HJOB",
    text: '`POST /api/jobs/{id}/cancel` stops a pending or running job and answers `{"cancelled": true}`; a finished or unknown id answers `{"cancelled": false}` and changes nothing.',
  },
  {
    id: "HJOB-6",
    group: "HJOB",
    text: "`POST /api/jobs/cancel {job_ids}` cancels the pending and running jobs named; a malformed id is 400 naming it in `invalid_ids`, and nothing is cancelled.",
  },
  {
    id: "HJOB-7",
    group: "HJOB",
    text: "`GET /api/features` answers the server's feature flags, the same as the WebSocket's `feature_flags` answer.",
  },
  {
    id: "HJOB-8",
    group: "HJOB",
    text: "`POST /api/prompt` takes a client's `prompt_id`: a canonical lowercase UUID becomes the job id on every interface, another value is 400 `invalid_prompt_id`, and an id already used answers with that prompt and never starts a second run.",
  },
  // Every 201 names what it created (issue #46), for clients and stateful fuzzers that follow it.
  {
    id: "LNK-1",
    group: "LNK",
    text: "Every 201 (a job submitted, an asset uploaded or created from a hash) carries a `Location` header, absolute or host-relative with the mount prefix, that a GET resolved against the answer's origin answers 200 with the created resource (the same `id`).",
  },
];

/** Every group, shared then extension, with its title. */
export const GROUPS: Readonly<Record<string, string>> = { ...SHARED_GROUPS, ...EXTENSION_GROUPS };

/** Every rule the suite checks: the shared rules, then the extension rules. */
export const RULES: readonly Rule[] = [...SHARED_RULES, ...EXTENSION_RULES];

const byId = new Map(RULES.map((r) => [r.id, r]));

/** The rule with this ID, or undefined. */
export function ruleById(id: string): Rule | undefined {
  return byId.get(id);
}

/** The rule ID a check title begins with (`SUB-6 UI-format ...` -> `SUB-6`), or undefined. */
export function ruleIdOf(title: string): string | undefined {
  const m = /^([A-Z]+-\d+)\b/.exec(title);
  return m && byId.has(m[1]!) ? m[1] : undefined;
}

/** The group of a rule ID (`SUB-6` -> `SUB`). */
export function groupOf(id: string): string {
  return id.replace(/-\d+$/, "");
}

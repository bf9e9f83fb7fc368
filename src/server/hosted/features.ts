// The server's feature flags: the one source of `GET /api/features` and the socket's `feature_flags` answer.
import type { components } from "../../../generated/openapi-types.ts";
import type { Runtime } from "../../runtime/runtime.ts";

/** What this server supports, as ComfyUI's feature flags say it. */
export function serverFeatures(runtime: Runtime): components["schemas"]["HostedFeatures"] {
  return { supports_preview_metadata: true, max_upload_size: runtime.config.maxUploadBytes };
}

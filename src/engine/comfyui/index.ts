// Public surface of the comfyui backend.
export { ComfyUIEngine, type ComfyUIEngineOptions } from "./comfyui-engine.ts";

// The engine of `flowgate serve` and `flowgate worker` (imported by them only once flags are read).
import { ComfyUIEngine } from "../engine/comfyui/index.ts";
import { EmbeddedEngine } from "../engine/embedded-engine.ts";
import type { Engine } from "../engine/engine.ts";
import type { Config } from "../config/config.ts";

/** The engine the configuration asks for. */
export function createEngine(config: Config): Engine {
  if (config.engine === "comfyui") return new ComfyUIEngine({ urls: config.comfyuiUrls, outputDirs: config.comfyuiOutputDirs, maxQueue: config.queueLimit });
  return new EmbeddedEngine({ partnerUrl: config.partnerUrl, cacheBytes: config.cacheBytes, jobMemoryBytes: config.jobMemoryBytes });
}

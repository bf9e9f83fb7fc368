// The engine of `flowgate serve` and `flowgate worker` (imported by them only once flags are read).
import { ComfyUIEngine, EmbeddedEngine, type Engine } from "../engine/index.ts";
import type { Config } from "../config/config.ts";

/** The engine the configuration asks for. */
export function createEngine(config: Config): Engine {
  if (config.engine === "comfyui") return new ComfyUIEngine({ urls: config.comfyuiUrls, outputDirs: config.comfyuiOutputDirs, maxQueue: config.queueLimit });
  return new EmbeddedEngine({ partnerUrl: config.partnerUrl, cacheBytes: config.cacheBytes, jobMemoryBytes: config.jobMemoryBytes });
}

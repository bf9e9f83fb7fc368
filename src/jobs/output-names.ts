// Output file names unique per owner and folder, ComfyUI style: the engine counts from 1 in
// every run, so `prefix_00001_.png` would repeat across jobs; the hosted interface finds files by
// name, so each run's files continue the owner's counter instead.
import { randomBytes } from "node:crypto";
import type { AssetFolder, Store } from "../store/index.ts";

const COUNTED = /^(.*)_(\d{5,})_(\.[^.]*)?$/;
/** A preview's name from the engine: ComfyUI's temp prefix ends in five random letters (`ComfyUI_temp_abcde_00001_.png`). */
const RANDOM_TEMP = /^(.*_temp)_[a-z]{5}(_\d{5,}_(\.[^.]*)?)$/;

/**
 * Most counters of a series taken at once. A series' blocks double from 1 up to this while this
 * process keeps naming in it: a busy series costs the database one write per 64 names, a rare
 * one leaves few counters unused when the process stops (names then skip them).
 */
export const OUTPUT_NAME_BLOCK_MAX = 64;

/** `count` random lowercase letters, as ComfyUI's preview prefixes have. */
function randomLetters(count: number): string {
  return Array.from(randomBytes(count), (b) => String.fromCharCode(97 + (b % 26))).join("");
}

/** Hands out names no current asset of the owner has, per folder. */
export class OutputNamer {
  private readonly store: Store;
  /** Counters taken and not handed out yet, per owner, folder, prefix and extension. */
  private readonly blocks = new Map<string, { next: number; end: number; size: number }>();
  private chain: Promise<unknown> = Promise.resolve();
  /** The five letters of this process's preview names, where ComfyUI draws them per node. */
  private readonly tempLetters: string;

  constructor(store: Store, tempLetters = randomLetters(5)) {
    this.store = store;
    this.tempLetters = tempLetters;
  }

  /** A unique name for `name` (serialized, so two runs never get the same one). */
  reserve(owner: string, folder: AssetFolder, name: string): Promise<string> {
    const p = this.chain.then(() => this.allocate(owner, folder, name));
    this.chain = p.catch(() => undefined);
    return p;
  }

  private async allocate(owner: string, folder: AssetFolder, engineName: string): Promise<string> {
    // A preview's random letters per run made its name unlikely to repeat, not unique, and a new
    // series per run: this process's own letters take their place (ComfyUI's shape,
    // `ComfyUI_temp_kqzvb_00042_.png`), and its series is counted as any other.
    const random = folder === "temp" ? RANDOM_TEMP.exec(engineName) : null;
    const name = random ? `${random[1]}_${this.tempLetters}${random[2]}` : engineName;
    const m = COUNTED.exec(name);
    // A name without a counter keeps its own name while it is free.
    if (!m && !(await this.store.findAssetByName(owner, name, folder))) return name;
    const [prefix, ext] = m ? [m[1]!, m[3] ?? ""] : [name.replace(/(\.[^.]*)?$/, ""), /\.[^.]*$/.exec(name)?.[0] ?? ""];
    // A counted name's counter comes from the series' block, taken from the store: one write per
    // block, never a read per name (two processes never get the same counter).
    const key = `${owner}\u0000${folder}\u0000${prefix}\u0000${ext}`;
    let block = this.blocks.get(key);
    if (block === undefined || block.next >= block.end) {
      const size = Math.min(OUTPUT_NAME_BLOCK_MAX, block === undefined ? 1 : block.size * 2);
      const first = await this.store.allotOutputNames(owner, folder, prefix, ext, size);
      block = { next: first, end: first + size, size };
      this.blocks.set(key, block);
    }
    return `${prefix}_${String(block.next++).padStart(5, "0")}_${ext}`;
  }
}

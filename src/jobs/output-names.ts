// Output file names unique per owner and folder, ComfyUI style: the engine counts from 1 in
// every run, so `prefix_00001_.png` would repeat across jobs; the hosted interface finds files by
// name, so each run's files continue the owner's counter instead.
import type { AssetFolder, Store } from "../store/index.ts";

const COUNTED = /^(.*)_(\d{5,})_(\.[^.]*)?$/;

/** Hands out names no current asset of the owner has, per folder. */
export class OutputNamer {
  private readonly store: Store;
  /** Next counter per owner, folder and prefix; probed from the store once per process. */
  private readonly next = new Map<string, number>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(store: Store) {
    this.store = store;
  }

  /** A unique name for `name` (serialized, so two runs never get the same one). */
  reserve(owner: string, folder: AssetFolder, name: string): Promise<string> {
    const p = this.chain.then(() => this.allocate(owner, folder, name));
    this.chain = p.catch(() => undefined);
    return p;
  }

  private async allocate(owner: string, folder: AssetFolder, name: string): Promise<string> {
    // Previews get a random prefix per run from the engine: one probe, and no counter kept for
    // a prefix that never comes back (the map would grow with every job).
    if (folder === "temp" && !(await this.store.findAssetByName(owner, name, folder))) return name;
    const m = COUNTED.exec(name);
    const [prefix, ext] = m ? [m[1]!, m[3] ?? ""] : [name.replace(/(\.[^.]*)?$/, ""), /\.[^.]*$/.exec(name)?.[0] ?? ""];
    const key = `${owner}\u0000${folder}\u0000${prefix}\u0000${ext}`;
    let n = this.next.get(key) ?? (m ? Number(m[2]) : 0);
    for (;;) {
      const candidate = n === 0 ? name : `${prefix}_${String(n).padStart(5, "0")}_${ext}`;
      n++;
      if (!(await this.store.findAssetByName(owner, candidate, folder))) {
        this.next.set(key, n);
        return candidate;
      }
    }
  }
}

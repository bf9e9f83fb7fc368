// Output records of one run whose bytes are durable and whose rows wait to be written: those of
// the run's last output node, written with its end in one transaction and one durable commit
// (Store.transitionJobWithAssets). Should the run go on after all (a node starts), or not end
// within OUTPUT_ROW_WAIT_MS, they are written by themselves.
import type { AssetService, RecordOptions, StoredOutput } from "../assets/asset-service.ts";
import { type AssetRecord, assetRecordOf } from "../store/index.ts";

/** How long a record waits for the run to go on or end before it is written by itself. */
export const OUTPUT_ROW_WAIT_MS = 1000;

interface Held {
  stored: StoredOutput;
  node: { node_id: string; class_type: string };
  written: (asset: AssetRecord | null) => void;
}

/** A record that could not be written: the run must not succeed. */
export interface RowFailure {
  error: unknown;
  node: { node_id: string; class_type: string };
}

/** The held records of one run. */
export class OutputRows {
  private held: Held[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly writing = new Set<Promise<void>>();
  /** The first record a flush failed to write, if any. */
  failure: RowFailure | null = null;

  private readonly assets: AssetService;
  private readonly waitMs: number;
  private readonly record: RecordOptions;

  /** `record`: the run's fence and retry, for the records written by themselves. */
  constructor(assets: AssetService, waitMs = OUTPUT_ROW_WAIT_MS, record: RecordOptions = {}) {
    this.assets = assets;
    this.waitMs = waitMs;
    this.record = record;
  }

  /** Holds an output's record; resolves with the record once written, null if it never is. */
  hold(stored: StoredOutput, node: { node_id: string; class_type: string }): Promise<AssetRecord | null> {
    return new Promise((written) => {
      this.held.push({ stored, node, written });
      if (this.timer === undefined) {
        this.timer = setTimeout(() => this.flush(), this.waitMs);
        this.timer.unref();
      }
    });
  }

  /** The run goes on: the held records are written now, each in its own commit. */
  flush(): void {
    const batch = this.take();
    if (batch.length === 0) return;
    const p = (async () => {
      for (const h of batch) {
        try {
          h.written(await this.assets.recordOutput(h.stored, this.record));
        } catch (error) {
          this.failure ??= { error, node: h.node };
          h.written(null);
        }
      }
    })();
    this.writing.add(p);
    void p.finally(() => this.writing.delete(p));
  }

  /** Resolves once no flush is under way. */
  async idle(): Promise<void> {
    while (this.writing.size > 0) await Promise.all([...this.writing]);
  }

  /**
   * The records still held, for the run's end: `done` tells them written (the records, in order)
   * or never written (null: the blobs they alone use are removed); `release` tells each its
   * record as it is about to be written, before the end's commit (the events that ride in it).
   */
  takeForEnd(): {
    stored: StoredOutput[];
    nodes: Array<{ node_id: string; class_type: string }>;
    release(): void;
    done(assets: AssetRecord[] | null): Promise<void>;
  } {
    const batch = this.take();
    return {
      stored: batch.map((h) => h.stored),
      nodes: batch.map((h) => h.node),
      release: () => {
        for (const h of batch) h.written(assetRecordOf(h.stored.record));
      },
      done: async (assets) => {
        if (assets === null) await this.assets.discardOutputs(batch.map((h) => h.stored));
        for (const [i, h] of batch.entries()) h.written(assets?.[i] ?? null);
      },
    };
  }

  private take(): Held[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.held;
    this.held = [];
    return batch;
  }
}

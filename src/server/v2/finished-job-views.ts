// Rendered answers of GET /api/v2/jobs/{id} for finished jobs. A terminal job's view never
// changes (its outputs cannot be deleted) until its signed links roll over to the next expiry
// step or the job passes retention, so its bytes are rendered once per link context and step,
// and a repeated GET is an owner check and a write.
import type { RenderedJson } from "../../../generated/handlers.ts";
import type { components } from "../../../generated/openapi-types.ts";
import { ownsJob, type Caller } from "../../domain/caller.ts";
import { isTerminalStatus, type JobRecord } from "../../store/index.ts";
import { ownUtf8 } from "../../domain/bytes.ts";

type JobBody = RenderedJson<components["schemas"]["Job"]>;

interface Entry {
  owner: string;
  deployment_id: string | null;
  /** The job's retention deadline: past it the job answers 404. */
  job_expires_at: number;
  /** The expiry of the links inside `body`. */
  links_expire_at: number;
  body: Buffer;
  /** Read since it was (re)queued: spared once by eviction (second chance, cheaper than LRU moves). */
  used: boolean;
}

/** A cache of finished jobs' rendered views, bounded in bytes, evicting the least recently used (second chance). */
export class FinishedJobViews {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;

  /** `maxBytes`: the most rendered bytes held at once. */
  private readonly maxBytes: number;

  constructor(maxBytes = 16 * 1024 * 1024) {
    this.maxBytes = maxBytes;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The rendered view of job `id` for links under `linkKey` expiring at `linksExpireAt`, if
   * cached and the caller's; undefined sends the caller down the full path (which answers 404
   * to anyone else).
   */
  get(caller: Caller, id: string, linkKey: string, linksExpireAt: number, now: number): JobBody | undefined {
    const key = `${id}\n${linkKey}`;
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.links_expire_at !== linksExpireAt || entry.job_expires_at <= now) {
      this.#delete(key, entry);
      return undefined;
    }
    if (!ownsJob(caller, entry)) return undefined;
    entry.used = true;
    return entry.body as Buffer & JobBody; // rendered from a Job by render()
  }

  /** Renders `view` to JSON bytes, keeping them when the job is finished. */
  render<T>(job: JobRecord, linkKey: string, linksExpireAt: number, view: T): RenderedJson<T> {
    const text = JSON.stringify(view);
    if (!isTerminalStatus(job.status)) return Buffer.from(text) as Buffer & RenderedJson<T>;
    // Kept: bytes of their own, or each view would keep a 64 KiB pool slab alive (domain/bytes.ts).
    const body = ownUtf8(text) as Buffer & RenderedJson<T>;
    if (body.length > this.maxBytes) return body;
    const key = `${job.id}\n${linkKey}`;
    const old = this.#entries.get(key);
    if (old !== undefined) this.#delete(key, old);
    this.#entries.set(key, {
      owner: job.owner,
      deployment_id: job.deployment_id,
      job_expires_at: job.expires_at,
      links_expire_at: linksExpireAt,
      body,
      used: false,
    });
    this.#bytes += body.length;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      if (entry.used) {
        // Read since it was queued: requeue it once instead of evicting it.
        entry.used = false;
        this.#entries.set(oldest, entry);
      } else this.#bytes -= entry.body.length;
    }
    return body;
  }

  /** Drops every cached view. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }

  #delete(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#bytes -= entry.body.length;
  }
}

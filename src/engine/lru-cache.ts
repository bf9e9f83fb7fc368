// A least-recently-used map bounded by the total byte size of its entries and by their count.

/** What an entry costs beyond its value: the map slot, the entry object and the key's header. */
const ENTRY_OVERHEAD = 160;

/** LRU cache whose capacity is a number of bytes (each entry weighed with its key) and of entries. */
export class ByteLruCache<V> {
  private readonly entries = new Map<string, { value: V; bytes: number }>();
  private total = 0;

  readonly maxBytes: number;
  readonly maxEntries: number;

  constructor(maxBytes: number, maxEntries: number = Number.POSITIVE_INFINITY) {
    this.maxBytes = maxBytes;
    this.maxEntries = maxEntries;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.total;
  }

  /** Number of entries. */
  get size(): number {
    return this.entries.size;
  }

  /** True when the key is cached (does not refresh its recency). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The value, marked most recently used; undefined on a miss. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores a value of `valueBytes`; evicts least recently used entries to fit. Returns false when it can never fit. */
  set(key: string, value: V, valueBytes: number): boolean {
    this.delete(key);
    const bytes = valueBytes + key.length * 2 + ENTRY_OVERHEAD;
    if (bytes > this.maxBytes || this.maxEntries < 1) return false;
    this.entries.set(key, { value, bytes });
    this.total += bytes;
    for (const [oldKey, entry] of this.entries) {
      if (this.total <= this.maxBytes && this.entries.size <= this.maxEntries) break;
      this.entries.delete(oldKey);
      this.total -= entry.bytes;
    }
    return true;
  }

  /** Removes a key. */
  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.total -= entry.bytes;
  }

  /** Keys from least to most recently used. */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Drops everything. */
  clear(): void {
    this.entries.clear();
    this.total = 0;
  }
}

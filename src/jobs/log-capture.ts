// Bounded capture of a run's standard output: the tail is kept and `truncated` is set.

/** Collects text in write order, keeping at most `limitBytes` of the tail. */
export class LogCapture {
  private chunks: string[] = [];
  private bytes = 0;
  private dropped = false;

  private readonly limitBytes: number;

  constructor(limitBytes: number) {
    this.limitBytes = limitBytes;
  }

  /** Appends text written by the run. */
  write(text: string): void {
    this.chunks.push(text);
    this.bytes += Buffer.byteLength(text);
    while (this.bytes > this.limitBytes && this.chunks.length > 0) {
      const first = this.chunks[0]!;
      const excess = this.bytes - this.limitBytes;
      const firstBytes = Buffer.byteLength(first);
      this.dropped = true;
      if (firstBytes <= excess) {
        this.chunks.shift();
        this.bytes -= firstBytes;
      } else {
        // Cut inside the chunk on a character boundary.
        const kept = Buffer.from(first)
          .subarray(excess)
          .toString("utf8")
          .replace(/^\uFFFD+/, "");
        this.chunks[0] = kept;
        this.bytes = this.bytes - firstBytes + Buffer.byteLength(kept);
      }
    }
  }

  /** The captured text and whether anything was shed. */
  result(): { text: string; truncated: boolean } {
    return { text: this.chunks.join(""), truncated: this.dropped };
  }
}

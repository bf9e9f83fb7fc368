// risingPositions: one owner's listed queued jobs read places rising with submission, never shared.
import { describe, expect, it } from "vitest";
import { risingPositions } from "../../src/jobs/list-positions.ts";
import type { JobRecord } from "../../src/store/index.ts";

const snap = (seq: number, status: JobRecord["status"], queue_position: number | null) => ({
  job: { id: `j${seq}`, seq, status } as JobRecord,
  queue_position,
});

describe("risingPositions", () => {
  it("raises a place counted after a job ahead started to one past the place of the job before it", () => {
    // Newest first, as a list answers: j1 counted at 0 before it started, j2 counted at 0 after.
    const out = risingPositions([snap(3, "queued", 1), snap(2, "queued", 0), snap(1, "queued", 0), snap(0, "running", null)]);
    expect(out.map((s) => s.queue_position)).toEqual([2, 1, 0, null]);
  });

  it("leaves places that already rise as they are, gaps included", () => {
    const out = risingPositions([snap(5, "queued", 9), snap(4, "succeeded", null), snap(2, "queued", 3)]);
    expect(out.map((s) => s.queue_position)).toEqual([9, null, 3]);
  });
});

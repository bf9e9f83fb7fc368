import { describe, expect, it } from "vitest";
import { closest, editDistance } from "../../src/engine/suggest.ts";

describe("did you mean", () => {
  it("counts edits, a swap of neighbours as one, case aside", () => {
    expect(editDistance("SaveImage", "SaveImage")).toBe(0);
    expect(editDistance("saveimage", "SaveImage")).toBe(0);
    expect(editDistance("SaveImag", "SaveImage")).toBe(1);
    expect(editDistance("EmtpyImage", "EmptyImage")).toBe(1);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
  });

  it("names the nearest known name only when it is a likely typo", () => {
    const names = ["SaveImage", "PreviewImage", "EmptyImage", "LoadImage", "ImageInvert"];
    expect(closest("SaveImag", names)).toBe("SaveImage");
    expect(closest("saveimage", names)).toBe("SaveImage");
    expect(closest("LoadImag", names)).toBe("LoadImage");
    expect(closest("KSampler", names)).toBeNull();
    expect(closest("ab", ["ac", "xy"])).toBe("ac");
    expect(closest("ab", ["xy"])).toBeNull();
    expect(closest("", names)).toBeNull();
    // Ties go to the first in alphabetical order, so the answer does not depend on the registry's order.
    expect(closest("cat", ["cut", "bat"])).toBe("bat");
    expect(closest("cat", ["bat", "cut"])).toBe("bat");
  });
});

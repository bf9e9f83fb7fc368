// The engine's slots (src/jobs/engine-slots.ts) and the claims ahead that follow the runs' times
// (src/jobs/claim-ahead.ts).
import { describe, expect, it } from "vitest";
import { ClaimAhead, SHORT_RUN_MS } from "../../src/jobs/claim-ahead.ts";
import { EngineSlots } from "../../src/jobs/engine-slots.ts";

/** Settles pending promise callbacks. */
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("EngineSlots", () => {
  it("gives slots in the order they were asked for, one per release, a release counting once", async () => {
    const slots = new EngineSlots(1);
    const order: string[] = [];
    const first = await slots.acquire();
    const noted = (name: string) => (release: () => void) => {
      order.push(name);
      return release;
    };
    const second = slots.acquire().then(noted("second"));
    const third = slots.acquire().then(noted("third"));
    await turn();
    expect(order).toEqual([]);
    expect(slots.waiting).toBe(2);
    first();
    first();
    const releaseSecond = await second;
    await turn();
    expect(order).toEqual(["second"]);
    releaseSecond();
    (await third)();
    expect(order).toEqual(["second", "third"]);
    expect(slots.free).toBe(1);
  });

  it("a forced take does not wait and is counted; a waiter aborted leaves the queue without a slot", async () => {
    const slots = new EngineSlots(1);
    const held = await slots.acquire();
    const forced = await slots.acquire(undefined, true);
    expect(slots.free).toBe(-1);
    const stop = new AbortController();
    const aborted = slots.acquire(stop.signal);
    const behind = slots.acquire();
    stop.abort();
    (await aborted)();
    expect(slots.free).toBe(-1);
    expect(slots.waiting).toBe(1);
    held();
    forced();
    (await behind)();
    expect(slots.free).toBe(1);
    expect(await slots.acquire(AbortSignal.abort()).then(() => slots.free)).toBe(1);
  });
});

describe("ClaimAhead", () => {
  it("claims as many jobs ahead as the slots after twice as many short runs in a row, none after a long one", () => {
    const ahead = new ClaimAhead(2);
    for (let i = 0; i < 3; i++) ahead.ran(1);
    expect(ahead.jobs).toBe(0);
    ahead.ran(SHORT_RUN_MS);
    expect(ahead.jobs).toBe(2);
    ahead.ran(SHORT_RUN_MS + 1);
    expect(ahead.jobs).toBe(0);
    for (let i = 0; i < 4; i++) ahead.ran(0);
    expect(ahead.jobs).toBe(2);
  });
});

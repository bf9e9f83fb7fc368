// Whether a process follows jobs other processes may run (src/jobs/event-bus.ts): the relay of a
// PostgreSQL server listens only while it does, since every notification heard costs the
// database a transaction of the listener's.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { EventBus, FOLLOWING_LINGER_MS } from "../../src/jobs/event-bus.ts";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

it("says at once when a stream or a socket starts following, and once the last has been gone for the linger", () => {
  const bus = new EventBus();
  const told: boolean[] = [];
  bus.watchFollowing(
    (on) => told.push(on),
    async () => undefined,
  );
  expect(told).toEqual([false]); // nobody at first
  const stopA = bus.subscribe("a", () => undefined);
  const stopB = bus.subscribe("b", () => undefined);
  const unfollow = bus.follow(); // a hosted socket
  expect(told).toEqual([false, true]);
  stopA();
  stopB();
  vi.advanceTimersByTime(FOLLOWING_LINGER_MS * 2);
  expect(told).toEqual([false, true]); // the socket still follows
  unfollow();
  unfollow(); // twice: released once
  vi.advanceTimersByTime(FOLLOWING_LINGER_MS - 1);
  expect(told).toEqual([false, true]);
  // A stream that comes back within the linger keeps the listener: nothing is told.
  const stopC = bus.subscribe("c", () => undefined);
  vi.advanceTimersByTime(FOLLOWING_LINGER_MS * 2);
  expect(told).toEqual([false, true]);
  stopC();
  vi.advanceTimersByTime(FOLLOWING_LINGER_MS);
  expect(told).toEqual([false, true, false]);
  expect(bus.following).toBe(false);
});

it("a stream's greeting waits until what other processes say is heard", async () => {
  const bus = new EventBus();
  await bus.hearing(); // no relay: at once
  let listened!: () => void;
  const listening = new Promise<void>((resolve) => (listened = resolve));
  bus.watchFollowing(
    () => undefined,
    () => listening,
  );
  let heard = false;
  const waiting = bus.hearing().then(() => (heard = true));
  await vi.advanceTimersByTimeAsync(10);
  expect(heard).toBe(false);
  listened();
  await waiting;
  expect(heard).toBe(true);
});

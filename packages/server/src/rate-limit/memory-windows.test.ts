import { RateLimiterRes } from "rate-limiter-flexible";
import { describe, expect, it } from "vitest";

import type { Clock } from "../clock.ts";
import { MemoryWindows } from "./memory-windows.ts";

/** A clock that moves only when told to. */
function manualClock(start = 1_000_000): Clock & { advance(ms: number): void } {
  let now = start;
  return {
    now: () => now,
    setTimer: () => () => {},
    advance: (ms) => (now += ms),
  };
}

const refusal = (promise: Promise<RateLimiterRes>) =>
  promise.then(
    (res) => {
      throw new Error(`allowed with ${res.remainingPoints} left`);
    },
    (res: unknown) => res as RateLimiterRes,
  );

describe("MemoryWindows: fixed windows on a clock", () => {
  it("allows `points` per window from a key's first request, refuses the rest until the window ends", async () => {
    const clock = manualClock();
    const windows = new MemoryWindows({ points: 3, windowSec: 2, clock });
    const first = await windows.consume("a");
    expect(first).toMatchObject({
      remainingPoints: 2,
      msBeforeNext: 2_000,
      consumedPoints: 1,
      isFirstInDuration: true,
    });
    clock.advance(500);
    expect(await windows.consume("a")).toMatchObject({ remainingPoints: 1, msBeforeNext: 1_500 });
    expect(await windows.consume("a")).toMatchObject({ remainingPoints: 0, msBeforeNext: 1_500 });
    const refused = await refusal(windows.consume("a"));
    expect(refused).toBeInstanceOf(RateLimiterRes);
    expect(refused).toMatchObject({ remainingPoints: 0, msBeforeNext: 1_500, consumedPoints: 4 });
    // Another key has its own window.
    expect(await windows.consume("b")).toMatchObject({ remainingPoints: 2, msBeforeNext: 2_000 });
    // Refused requests count too, as with rate-limiter-flexible's memory limiter.
    clock.advance(1_499);
    expect(await refusal(windows.consume("a"))).toMatchObject({ msBeforeNext: 1, consumedPoints: 5 });
    clock.advance(1);
    expect(await windows.consume("a")).toMatchObject({
      remainingPoints: 2,
      msBeforeNext: 2_000,
      isFirstInDuration: true,
    });
  });

  it("forgets ended windows: a key seen again long after starts afresh", async () => {
    const clock = manualClock();
    const windows = new MemoryWindows({ points: 1, windowSec: 1, clock });
    await windows.consume("a");
    await refusal(windows.consume("a"));
    clock.advance(10_000);
    // The sweep on this call drops "a"'s ended window with every other ended one.
    expect(await windows.consume("b")).toMatchObject({ remainingPoints: 0 });
    expect(await windows.consume("a")).toMatchObject({
      remainingPoints: 0,
      consumedPoints: 1,
      isFirstInDuration: true,
    });
  });
});

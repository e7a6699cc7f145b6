import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { LogThrottle } from "./log-throttle.ts";

describe("LogThrottle", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function recorder(throttle: LogThrottle) {
    const lines: string[] = [];
    const log = (kind: string, tag = kind) =>
      throttle.log(
        kind,
        () => lines.push(`${tag} full`),
        (repeats) => lines.push(`${tag} x${repeats}`),
      );
    return { lines, log };
  }

  it("logs the first failure of a kind in full, then one count per interval, then forgets it", () => {
    const throttle = new LogThrottle({ intervalMs: 10_000 });
    const { lines, log } = recorder(throttle);
    for (let i = 0; i < 1_000; i++) log("disk full");
    expect(lines).toEqual(["disk full full"]);
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual(["disk full full", "disk full x999"]);
    log("disk full");
    log("disk full");
    vi.advanceTimersByTime(10_000);
    expect(lines.at(-1)).toBe("disk full x2");
    // A whole interval without a repeat: the kind is forgotten, and its next failure is logged in full.
    vi.advanceTimersByTime(10_000);
    log("disk full");
    expect(lines.at(-1)).toBe("disk full full");
    expect(lines).toHaveLength(4);
  });

  it("keeps kinds apart, and the summary names the latest repeat", () => {
    const throttle = new LogThrottle({ intervalMs: 1_000 });
    const { lines, log } = recorder(throttle);
    log("a", "a#1");
    log("b", "b#1");
    log("a", "a#2");
    log("a", "a#3");
    vi.advanceTimersByTime(1_000);
    expect(lines).toEqual(["a#1 full", "b#1 full", "a#3 x2"]);
  });

  it("bounds the kinds it tracks: beyond the limit, new kinds share one window", () => {
    const throttle = new LogThrottle({ intervalMs: 1_000, maxKinds: 2 });
    const { lines, log } = recorder(throttle);
    for (let i = 0; i < 50; i++) log(`kind ${i}`);
    expect(lines).toEqual(["kind 0 full", "kind 1 full", "kind 2 full"]);
    vi.advanceTimersByTime(1_000);
    expect(lines.at(-1)).toBe("kind 49 x47");
  });

  it("writes the counts it holds when flushed (at shutdown)", () => {
    const throttle = new LogThrottle({ intervalMs: 10_000 });
    const { lines, log } = recorder(throttle);
    log("x");
    log("x");
    throttle.flush();
    expect(lines).toEqual(["x full", "x x1"]);
    vi.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(2);
  });
});

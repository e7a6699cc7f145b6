import { describe, expect, it } from "vitest";

import { backoffMs, MAX_ATTEMPTS, nextAttemptAt, retryAfterMs } from "./retry-policy.ts";

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
const DEFAULT_BASE_MS = 5_000;

/** The wait before each retry, from the first failure to the last attempt. */
const schedule = (random: () => number) =>
  Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => backoffMs(i + 1, DEFAULT_BASE_MS, random));
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe("backoffMs", () => {
  it("doubles from the base per attempt and stops growing at six hours", () => {
    const middle = () => 0.5; // no jitter
    expect([1, 2, 3, 4].map((n) => backoffMs(n, DEFAULT_BASE_MS, middle))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(backoffMs(13, DEFAULT_BASE_MS, middle)).toBe(5_000 * 2 ** 12);
    expect(backoffMs(14, DEFAULT_BASE_MS, middle)).toBe(6 * HOUR);
    expect(backoffMs(MAX_ATTEMPTS, DEFAULT_BASE_MS, middle)).toBe(6 * HOUR);
  });

  it("jitters by ±50%", () => {
    expect(backoffMs(3, DEFAULT_BASE_MS, () => 0)).toBe(10_000);
    expect(backoffMs(3, DEFAULT_BASE_MS, () => 0.999_999)).toBe(30_000);
    const seen = new Set(Array.from({ length: 50 }, () => backoffMs(3, DEFAULT_BASE_MS)));
    expect(seen.size).toBeGreaterThan(1);
    for (const ms of seen) expect(ms >= 10_000 && ms <= 30_000).toBe(true);
  });

  it("spreads the attempts over about three days with the default base", () => {
    const nominal = sum(schedule(() => 0.5));
    expect(nominal).toBeGreaterThan(2.75 * DAY);
    expect(nominal).toBeLessThan(3.25 * DAY);
    // Jitter moves every wait by at most half, so the whole span stays within half of that too.
    expect(sum(schedule(() => 0))).toBeCloseTo(nominal / 2, -3);
    expect(sum(schedule(() => 0.999_999))).toBeLessThanOrEqual(nominal * 1.5);
  });
});

describe("retryAfterMs", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");

  it("reads delay-seconds and HTTP-dates (RFC 9110 §10.2.3)", () => {
    expect(retryAfterMs("120", now)).toBe(120_000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:02:00 GMT", now)).toBe(120_000);
  });

  it("ignores what it cannot use: absent, empty, garbage, negative, a date in the past", () => {
    for (const header of [undefined, "", "soon", "-5", "1.5", "Wed, 31 Dec 2025 23:00:00 GMT"]) {
      expect(retryAfterMs(header, now)).toBeUndefined();
    }
  });

  it("waits at most a day, whatever the receiver asks", () => {
    expect(retryAfterMs(String(7 * 24 * 3600), now)).toBe(DAY);
  });
});

describe("nextAttemptAt", () => {
  const now = 1_000_000;

  it("honours a Retry-After longer than the backoff", () => {
    expect(nextAttemptAt({ now, attemptsSoFar: 1, baseMs: 40, retryAfterHeader: "2" })).toBe(now + 2_000);
  });

  it("keeps the backoff when Retry-After asks for less", () => {
    const at = nextAttemptAt({ now, attemptsSoFar: 1, baseMs: 60_000, retryAfterHeader: "1" });
    expect(at - now).toBeGreaterThanOrEqual(30_000);
    expect(at - now).toBeLessThanOrEqual(90_000);
  });
});

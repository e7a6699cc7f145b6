import { describe, expect, it } from "vitest";

import { reconnectDelay } from "./reconnect-delay.ts";

describe("reconnectDelay", () => {
  it("waits the server's retry hint before the first attempt, plus up to half again", () => {
    expect(reconnectDelay(1, 2000, 30_000, () => 0)).toBe(2000);
    expect(reconnectDelay(1, 2000, 30_000, () => 0.5)).toBe(2500);
    expect(reconnectDelay(1, 2000, 30_000, () => 0.999)).toBe(2999);
  });

  it("doubles with every attempt that failed before", () => {
    expect([1, 2, 3, 4].map((attempt) => reconnectDelay(attempt, 500, 30_000, () => 0))).toEqual([
      500, 1000, 2000, 4000,
    ]);
  });

  it("never waits more than the cap, however many attempts failed", () => {
    for (const attempt of [6, 20, 1000, Number.MAX_SAFE_INTEGER])
      expect(reconnectDelay(attempt, 2000, 30_000, () => 0.999)).toBe(30_000);
  });

  it("lets the caller's cap win over a longer hint", () => {
    expect(reconnectDelay(1, 2000, 50, () => 0.7)).toBe(50);
  });
});

import { RateLimiterRes } from "rate-limiter-flexible";

import type { Clock } from "../clock.ts";

type Window = { consumed: number; endsAt: number };

/**
 * Fixed windows counted in this instance's memory: what rate-limiter-flexible's RateLimiterMemory
 * counts (a key's window starts at its first request and lasts `windowSec`; refused requests count
 * too), answered with the same RateLimiterRes as the Redis limiter, but timed by a Clock, so a test
 * ends a window by moving the clock on instead of waiting for it.
 */
export class MemoryWindows {
  readonly #points: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  readonly #windows = new Map<string, Window>();
  /** Ended windows are dropped at most once per window length, in one sweep, instead of a timer per key. */
  #sweepAfter: number;

  constructor(options: { points: number; windowSec: number; clock: Clock }) {
    this.#points = options.points;
    this.#windowMs = options.windowSec * 1000;
    this.#clock = options.clock;
    this.#sweepAfter = options.clock.now() + this.#windowMs;
  }

  /** Counts one request for `key`: resolves while within the allowance, rejects with the refusal once over it. */
  consume(key: string): Promise<RateLimiterRes> {
    const now = this.#clock.now();
    if (now >= this.#sweepAfter) this.#sweep(now);
    const held = this.#windows.get(key);
    const first = held === undefined || held.endsAt <= now;
    const window = first ? { consumed: 0, endsAt: now + this.#windowMs } : held;
    if (first) this.#windows.set(key, window);
    window.consumed++;
    const res = new RateLimiterRes(
      Math.max(this.#points - window.consumed, 0),
      window.endsAt - now,
      window.consumed,
      first,
    );
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- rate-limiter-flexible's contract, which the Redis limiter keeps: a refusal rejects with the RateLimiterRes
    return window.consumed > this.#points ? Promise.reject(res) : Promise.resolve(res);
  }

  #sweep(now: number): void {
    for (const [key, window] of this.#windows) if (window.endsAt <= now) this.#windows.delete(key);
    this.#sweepAfter = now + this.#windowMs;
  }
}

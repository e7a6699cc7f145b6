import { eventually, type EventuallyOptions } from "@plantstore/test-support/eventually";

import type { Clock } from "../../src/clock.ts";

type Timer = { due: number; callback: () => unknown; cancel: () => void };

/**
 * The wall clock plus whatever the test skipped. It never runs behind `Date.now()`, which the
 * store stamps new events with, so a new event is due at once as in production; `skip(ms)` moves
 * it on, so a test reaches a retry hours away without waiting for it. Timers fire when their time
 * comes, by real time passing or by a skip.
 */
export class SkippableClock implements Clock {
  #skipped = 0;
  readonly #timers = new Set<Timer>();

  now(): number {
    return Date.now() + this.#skipped;
  }

  setTimer(callback: () => unknown, ms: number): () => void {
    const timer: Timer = { due: this.now() + ms, callback, cancel: () => {} };
    // eslint-disable-next-line no-restricted-syntax -- a clock's own timer: between skips it runs on the wall clock
    const real = setTimeout(() => {
      this.#timers.delete(timer);
      void callback();
    }, ms);
    real.unref();
    timer.cancel = () => {
      clearTimeout(real);
      this.#timers.delete(timer);
    };
    this.#timers.add(timer);
    return timer.cancel;
  }

  /**
   * As if `ms` passed at once: every timer that falls due fires (in order, all before any is
   * waited for, so a deadline can end the attempt a poll waits on), and this resolves once the work
   * they returned has finished. The webhook dispatcher's poll returns its delivery pass: once
   * `skip` resolves, whatever was due by then has been sent and recorded.
   */
  async skip(ms: number): Promise<void> {
    this.#skipped += ms;
    const now = this.now();
    const due = [...this.#timers].filter((t) => t.due <= now).sort((a, b) => a.due - b.due);
    for (const timer of due) timer.cancel();
    await Promise.all(due.map((timer) => timer.callback()));
  }

  /** Skips `stepMs` at a time (100 ms unless told) until `check` holds, and returns what it returned. */
  skipUntil<T>(
    check: () => T | false | undefined | null | Promise<T | false | undefined | null>,
    options: EventuallyOptions & { stepMs?: number },
  ): Promise<T> {
    const stepMs = options.stepMs ?? 100;
    return eventually(async () => {
      await this.skip(stepMs);
      return check();
    }, options);
  }
}

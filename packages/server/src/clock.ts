/**
 * Time as a dependency: code that waits, expires or retries asks a `Clock` instead of `Date.now()`
 * and `setTimeout`, so a test can move time on instead of sleeping through it.
 */
export type Clock = {
  /** Milliseconds since the epoch, comparable with the times the store writes. */
  now(): number;
  /**
   * Calls `callback` once `ms` of this clock's time has passed, and returns what cancels it. The
   * callback may return a promise of the work it started, which a test clock waits for.
   */
  setTimer(callback: () => unknown, ms: number): () => void;
};

/** The wall clock; its timers do not keep the process alive by themselves. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(callback, ms) {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** Calls `run` every `ms` of the clock's time (the next call is set before this one runs); returns what stops it. */
export function every(clock: Clock, ms: number, run: () => unknown): () => void {
  let cancel = () => {};
  const arm = () => {
    cancel = clock.setTimer(() => {
      arm();
      return run();
    }, ms);
  };
  arm();
  return () => cancel();
}

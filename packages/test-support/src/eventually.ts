import { setTimeout as sleep } from "node:timers/promises";

export type EventuallyOptions = {
  /** What the test waits for, named in the failure; a function is called at the time, so it can say how far things got. */
  what: string | (() => string);
  /** How long the condition may take to hold (default 10 s); a generous bound, not a measurement. */
  timeoutMs?: number;
  /** Pause between checks (default 20 ms). */
  intervalMs?: number;
};

/**
 * Waits for something another process, socket or timer makes true: calls `check` until it returns
 * a value other than `false`, `undefined` or `null` (or stops throwing) and returns that value.
 * This is the one place a test polls; a test never sleeps a fixed time (the test files' lint
 * rules in tooling/eslint/base.js refuse bare timers; each one kept says why beside it).
 *
 * Fails after `timeoutMs` naming `what` and the last error `check` threw, if any.
 */
export async function eventually<T>(
  check: () => T | false | undefined | null | Promise<T | false | undefined | null>,
  options: EventuallyOptions,
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 20;
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== false && value !== undefined && value !== null) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() > deadline) {
      const what = typeof options.what === "function" ? options.what() : options.what;
      const why =
        lastError === undefined
          ? ""
          : `; last check threw: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`, { cause: lastError });
    }
    await sleep(intervalMs);
  }
}

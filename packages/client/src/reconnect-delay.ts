/** Before the server has sent a `retry:` hint. */
export const DEFAULT_RECONNECT_MS = 1_000;
/** The longest a reconnection waits by default, however many attempts failed. */
export const DEFAULT_MAX_RECONNECT_MS = 30_000;

/**
 * How long to wait before reconnection attempt `attempt` (1 for the first after a drop): the
 * server's `retry:` hint, doubled for each attempt that failed before it, plus up to half of that
 * again at random, so that clients dropped together do not all come back at once; never more than
 * `maxMs`. The hint is a floor unless the caller's cap is lower: the caller's cap wins.
 */
export function reconnectDelay(attempt: number, hintMs: number, maxMs: number, random: () => number): number {
  const doubled = hintMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30);
  return Math.round(Math.min(maxMs, doubled * (1 + random() / 2)));
}

/**
 * When to try a failed delivery again: exponential backoff from `baseMs`, doubling per attempt up
 * to six hours, with ±50% jitter so receivers coming back are not hit by every sender at once.
 * With the default 5 s base, MAX_ATTEMPTS spans about three days: thirteen quickening retries over
 * the first ~11 h, then one every ~6 h (retry-policy.test.ts adds the schedule up). A receiver's
 * `Retry-After` wins when it asks for longer, up to a day.
 */
export const MAX_ATTEMPTS = 24;
const CAP_MS = 6 * 60 * 60 * 1000;
const RETRY_AFTER_CAP_MS = 24 * 60 * 60 * 1000;

export function backoffMs(attemptsSoFar: number, baseMs: number, random: () => number = Math.random): number {
  const exponential = Math.min(baseMs * 2 ** Math.max(0, attemptsSoFar - 1), CAP_MS);
  return Math.round(exponential * (0.5 + random()));
}

/** Parses `Retry-After` (delay-seconds or an HTTP-date, RFC 9110 §10.2.3) into milliseconds from now. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined || header.trim() === "") return undefined;
  const trimmed = header.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  return Math.min(ms, RETRY_AFTER_CAP_MS);
}

export function nextAttemptAt(options: {
  now: number;
  attemptsSoFar: number;
  baseMs: number;
  retryAfterHeader: string | undefined;
}): number {
  const backoff = backoffMs(options.attemptsSoFar, options.baseMs);
  const asked = retryAfterMs(options.retryAfterHeader, options.now);
  return options.now + Math.max(backoff, asked ?? 0);
}

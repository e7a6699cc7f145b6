/**
 * Polls `check` (after `refresh`, when given) until it holds; fails naming `what` (computed at
 * the time, so it can say how far things got) after `timeoutMs`.
 */
export async function waitFor(
  check: () => boolean,
  timeoutMs: number,
  what: () => string,
  refresh?: () => Promise<void>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await refresh?.();
    if (check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

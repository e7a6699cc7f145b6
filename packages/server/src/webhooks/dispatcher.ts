import type { Logger } from "pino";

import { type Clock, systemClock } from "../clock.ts";
import { LogThrottle } from "../log-throttle.ts";
import type { Metrics } from "../metrics.ts";
import { StoreError } from "../storage/store-errors.ts";
import type { ClaimedDelivery, WebhookQueue } from "../storage/webhook-queue.ts";
import type { OutboundPolicy } from "./outbound-guard.ts";
import { MAX_ATTEMPTS, nextAttemptAt } from "./retry-policy.ts";
import { sendDelivery } from "./sender.ts";

export type DispatcherOptions = {
  queue: WebhookQueue;
  policy: OutboundPolicy;
  logger: Logger;
  /** Bounds the lines of failures that repeat on every poll or attempt. */
  logThrottle?: LogThrottle;
  metrics: Metrics;
  timeoutMs: number;
  retryBaseMs: number;
  /** How often to look for due retries when nothing new was written. */
  pollMs?: number;
  concurrency?: number;
  /** Times attempts, the retry schedule, leases, the attempt deadline and polling (default: the wall clock). */
  clock?: Clock;
};

/**
 * How long a claim holds a delivery: the attempt (bounded by `timeoutMs`) twice over, plus a
 * margin for recording its outcome and for clocks that differ between instances. The margin is
 * 5 s, or twice the attempt timeout when that is shorter: whoever sets short attempts (a test, a
 * receiver on the same network) also gets a crashed instance's deliveries back soon, while the
 * default 10 s timeout keeps its 25 s lease.
 */
export function leaseMs(timeoutMs: number): number {
  return timeoutMs * 2 + Math.min(5_000, timeoutMs * 2);
}

/**
 * Delivers the outbox: claims due deliveries (a lease, so other processes skip them), sends them
 * concurrently, and records each attempt. At-least-once: a delivery is marked done only after a
 * 2xx, so a crash between sending and recording sends it again, with the same `webhook-id`.
 */
export function startDispatcher(options: DispatcherOptions): { stop(): Promise<void> } {
  const { queue, policy, logger, metrics, timeoutMs, retryBaseMs } = options;
  const pollMs = options.pollMs ?? 500;
  const concurrency = options.concurrency ?? 16;
  const clock = options.clock ?? systemClock;
  let stopping = false;
  let running: Promise<void> | undefined;
  let requested = false;
  let cancelPoll: (() => void) | undefined;
  let databaseDown = false;
  const throttle = options.logThrottle ?? new LogThrottle();
  /** A failure that may repeat on every poll: one line per kind per interval, then the count. */
  const logFailure = (msg: string, error: unknown) => {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throttle.log(
      `webhooks ${msg} ${text.slice(0, 200)}`,
      () => logger.error({ err: error }, msg),
      (repeats) => logger.error({ repeats, intervalMs: throttle.intervalMs, error: text }, `${msg} (repeats)`),
    );
  };

  const attempt = async (delivery: ClaimedDelivery): Promise<void> => {
    const result = await sendDelivery(delivery, policy, timeoutMs, clock);
    const now = clock.now();
    const attempts = delivery.attempts + 1;
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const gone = result.statusCode === 410;
    const outcome = ok ? "delivered" : gone ? "gone" : attempts >= MAX_ATTEMPTS ? "failed" : "pending";
    metrics.webhookAttempts.inc({ outcome: ok ? "delivered" : gone ? "gone" : "failed_attempt" });
    await queue.recordAttempt({
      deliveryId: delivery.deliveryId,
      subscriberId: delivery.subscriberId,
      attemptedAt: now,
      durationMs: result.durationMs,
      statusCode: result.statusCode,
      error: result.error,
      result: outcome,
      nextAttemptAt:
        outcome === "pending"
          ? nextAttemptAt({ now, attemptsSoFar: attempts, baseMs: retryBaseMs, retryAfterHeader: result.retryAfter })
          : now,
    });
    // A final outcome counts once it is recorded: before that, the outbox still holds the delivery
    // (its depth would disagree), and if recording fails the delivery is attempted again.
    if (outcome !== "pending") metrics.webhookDeliveries.inc({ outcome });
    if (!ok) {
      logger.warn(
        {
          delivery: delivery.deliveryId,
          subscriber: delivery.subscriberId,
          status: result.statusCode,
          error: result.error,
          attempts,
          outcome,
        },
        "webhook attempt failed",
      );
    }
  };

  /** Claims and sends until nothing is due; an outage ends the pass and is logged once. */
  const pass = async (): Promise<void> => {
    try {
      for (;;) {
        const now = clock.now();
        if (!(await queue.hasDueDeliveries(now))) break;
        const claimed = await queue.claimDeliveries({
          now,
          leaseUntil: now + leaseMs(timeoutMs),
          limit: concurrency,
        });
        if (claimed.length === 0) break;
        await Promise.all(
          claimed.map((d) => attempt(d).catch((error: unknown) => logFailure("webhook bookkeeping failed", error))),
        );
        if (stopping) break;
      }
      if (databaseDown) logger.info("webhook dispatch resumed: the database answers again");
      databaseDown = false;
    } catch (error) {
      // An outage (or a full disk, a lock) is logged once, not on every poll; the deliveries wait
      // in the outbox meanwhile.
      if (error instanceof StoreError) {
        if (!databaseDown) logger.warn({ err: error }, `webhook dispatch paused: ${error.message}`);
        databaseDown = true;
        return;
      }
      logFailure("webhook dispatch failed", error);
    }
  };

  /**
   * Asks for a pass, and returns a promise of one that starts after this call. Passes never
   * overlap: a request that comes during one (a commit, a poll) runs another after it, so an event
   * written while a pass was looking is not left for the next poll.
   */
  const kick = (): Promise<void> => {
    if (stopping) return running ?? Promise.resolve();
    requested = true;
    running ??= (async () => {
      try {
        while (requested && !stopping) {
          requested = false;
          await pass();
        }
      } finally {
        // In the same step as the last check of `requested`: no request falls in between.
        running = undefined;
      }
    })();
    return running;
  };

  queue.onEvents(() => void kick());
  const schedule = () => {
    cancelPoll = clock.setTimer(() => {
      schedule();
      return kick();
    }, pollMs);
  };
  schedule();
  void kick();

  return {
    // Stops at a safe point: no new claims; attempts under way finish and are recorded.
    async stop() {
      stopping = true;
      cancelPoll?.();
      await running;
    },
  };
}

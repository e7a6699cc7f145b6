import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import type { Clock } from "../clock.ts";
import { createLogger } from "../logger.ts";
import { createMetrics } from "../metrics.ts";
import type { WebhookQueue } from "../storage/webhook-queue.ts";
import { leaseMs, startDispatcher } from "./dispatcher.ts";
import { createOutboundPolicy } from "./outbound-guard.ts";

/**
 * When the dispatcher looks for work, tested alone: a queue that answers "is anything due?" when
 * the test says so and never has a delivery to claim (delivery itself is tested over HTTP, in
 * test/webhooks/), so the test decides exactly when a commit falls.
 */
function heldQueue() {
  const checks: Array<(due: boolean) => void> = [];
  let onEvents = () => {};
  const queue: WebhookQueue = {
    hasDueDeliveries: () => new Promise<boolean>((resolve) => checks.push(resolve)),
    claimDeliveries: () => Promise.resolve([]),
    recordAttempt: () => Promise.resolve(),
    webhookBacklog: () => Promise.resolve(0),
    onEvents: (listener) => (onEvents = listener),
  };
  return { queue, checks, commit: () => onEvents() };
}

/** A clock whose timers the test fires itself. */
function heldClock() {
  const timers: Array<{ callback: () => unknown; ms: number }> = [];
  const clock: Clock = {
    now: () => 1_000_000,
    setTimer: (callback, ms) => {
      timers.push({ callback, ms });
      return () => {};
    },
  };
  return { clock, timers };
}

function start(queue: WebhookQueue, clock: Clock) {
  return startDispatcher({
    queue,
    clock,
    policy: createOutboundPolicy([]),
    logger: createLogger("silent"),
    metrics: createMetrics(),
    timeoutMs: 1_000,
    retryBaseMs: 40,
    // No poll comes on its own within a test: what happens, a commit or the test's timer started.
    pollMs: 24 * 60 * 60 * 1000,
  });
}

describe("the webhook dispatcher", () => {
  it("looks again when an event is committed while it was looking, without waiting for a poll", async () => {
    const { queue, checks, commit } = heldQueue();
    const dispatcher = start(queue, heldClock().clock);
    expect(checks).toHaveLength(1); // its first look, at start
    commit(); // a plant is written while it looks
    checks[0]!(false); // that look, made before the commit, saw nothing due
    await eventually(() => checks.length === 2, { what: "a second look" });
    checks[1]!(false);
    await dispatcher.stop();
  });

  it("polls on its clock, and a poll's timer returns the pass it started", async () => {
    const { queue, checks } = heldQueue();
    const { clock, timers } = heldClock();
    const dispatcher = start(queue, clock);
    expect(timers.map((t) => t.ms)).toEqual([24 * 60 * 60 * 1000]);
    checks[0]!(false);
    const pass = timers[0]!.callback() as Promise<void>;
    expect(timers).toHaveLength(2); // the next poll is set
    let finished = false;
    void pass.then(() => (finished = true));
    await eventually(() => checks.length === 2, { what: "the poll's look" });
    expect(finished).toBe(false);
    checks[1]!(false);
    await pass;
    await dispatcher.stop();
  });
});

describe("the lease on a claimed delivery", () => {
  it("is two attempt timeouts plus 5 s by default, and shrinks with short attempts", () => {
    expect(leaseMs(10_000)).toBe(25_000); // the default PLANTSTORE_WEBHOOK_TIMEOUT_MS
    expect(leaseMs(2_500)).toBe(10_000);
    expect(leaseMs(500)).toBe(2_000); // test/process/crash-safety.test.ts
    expect(leaseMs(120_000)).toBe(245_000);
  });
});

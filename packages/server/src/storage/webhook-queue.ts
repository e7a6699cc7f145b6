import type { AttemptRecord, ClaimedDelivery } from "./sqlite/writer-protocol.ts";

export type { AttemptRecord, ClaimedDelivery };

/**
 * The storage side of webhook delivery. Claims are leases: a delivery claimed by one dispatcher
 * (one process) is not handed to another until the lease runs out, so several processes on one
 * database do not send the same attempt twice in the normal case.
 */
export interface WebhookQueue {
  /** A cheap read: is any delivery due now? Lets an idle dispatcher poll without writing. */
  hasDueDeliveries(now: number): Promise<boolean>;
  claimDeliveries(options: { now: number; leaseUntil: number; limit: number }): Promise<ClaimedDelivery[]>;
  recordAttempt(attempt: AttemptRecord): Promise<void>;
  /** Deliveries still pending: the outbox depth. */
  webhookBacklog(): number;
  /** Called after a commit that wrote new events, so the dispatcher need not wait for its next poll. */
  onEvents(listener: () => void): void;
}

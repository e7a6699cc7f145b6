/** A delivery the dispatcher holds a lease on, with what it needs to send it. */
export type ClaimedDelivery = {
  deliveryId: number;
  attempts: number;
  messageId: string;
  payload: string;
  createdAt: number;
  subscriberId: string;
  url: string;
  secret: string;
};

export type AttemptRecord = {
  deliveryId: number;
  subscriberId: string;
  attemptedAt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  /** `delivered`, `pending` (retry at nextAttemptAt), `failed` (gave up) or `gone` (410: disable the subscriber). */
  result: "delivered" | "pending" | "failed" | "gone";
  nextAttemptAt: number;
};

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
  webhookBacklog(): Promise<number>;
  /**
   * Called after a commit in this process that wrote new events, so the dispatcher need not wait
   * for its next poll. Events written by other processes are found by that poll.
   */
  onEvents(listener: () => void): void;
}

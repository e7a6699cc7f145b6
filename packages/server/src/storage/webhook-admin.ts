import { randomBytes } from "node:crypto";

/**
 * Subscriber and delivery administration behind `plantstore-server webhooks …`, on whichever
 * database `DATABASE_URL` names. It runs in its own short-lived process beside running servers;
 * they pick up a new subscriber with their next write.
 */
export type Subscriber = { id: string; url: string; active: boolean; disabledReason: string | null; createdAt: string };

export type DeliveryRow = {
  id: number;
  messageId: string;
  subscriberId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string;
  lastStatus: number | null;
  lastError: string | null;
};

/** One recorded attempt of a delivery: the receiver's status, or why no status came back. */
export type AttemptRow = { attemptedAt: string; statusCode: number | null; error: string | null; durationMs: number };

export type ReplayOutcome = "queued" | "no_delivery" | "subscriber_removed" | "subscriber_disabled";

export interface WebhookAdmin {
  add(url: string, secret: string): Promise<Subscriber>;
  list(): Promise<Subscriber[]>;
  /** Removes the subscriber; its pending deliveries are cancelled, their history kept. */
  remove(id: string): Promise<boolean>;
  deliveries(options: { failedOnly: boolean; limit: number }): Promise<DeliveryRow[]>;
  /** Every recorded attempt of a delivery, oldest first. */
  attempts(deliveryId: number): Promise<AttemptRow[]>;
  /**
   * Queues a delivery to be sent again now (same webhook-id), whatever its state, unless there is
   * no such delivery or its subscriber was removed or disabled since (nothing could be sent).
   */
  replay(id: number): Promise<ReplayOutcome>;
  close(): Promise<void>;
}

export function newSubscriberId(): string {
  return `whk_${randomBytes(9).toString("base64url")}`;
}

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** Standard Webhooks secrets: `whsec_` and base64 of 24 to 64 random bytes. */
export function checkWebhookSecret(secret: string): void {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  const bytes = match?.[1] === undefined ? 0 : Buffer.from(match[1], "base64").length;
  if (bytes < 24 || bytes > 64) throw new Error("a secret must be whsec_ followed by base64 of 24 to 64 bytes");
}

import { randomBytes } from "node:crypto";

import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "./webhook-event.ts";

/**
 * Subscriber and delivery administration behind `plantstore-server webhooks …`, on whichever
 * database `DATABASE_URL` names. It runs in its own short-lived process beside running servers;
 * they pick up a new subscriber with their next write.
 */
export type Subscriber = {
  id: string;
  url: string;
  /** The event types it chose, each sent as a Standard Webhooks envelope; null: only the bare new-plant payload (as before event types existed). */
  events: WebhookEventType[] | null;
  active: boolean;
  disabledReason: string | null;
  createdAt: string;
};

export type DeliveryRow = {
  id: number;
  messageId: string;
  /** What the delivery sends: a Standard Webhooks envelope of this type; null: the bare new-plant payload (a subscriber without event types). */
  event: WebhookEventType | null;
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
  /** Without `events`, a subscriber of the bare new-plant payload only, as every one added before event types existed. */
  add(url: string, secret: string, events?: readonly WebhookEventType[]): Promise<Subscriber>;
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

/** `--events plant.created,plant.updated`: the types, each known, none twice, at least one. */
export function parseWebhookEvents(list: string): WebhookEventType[] {
  const types = [...new Set(list.split(",").map((t) => t.trim()))].filter((t) => t !== "");
  const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0 || types.length === 0)
    throw new Error(`--events takes a comma-separated list of ${WEBHOOK_EVENT_TYPES.join(", ")}`);
  return types as WebhookEventType[];
}

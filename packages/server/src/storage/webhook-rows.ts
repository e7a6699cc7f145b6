import type { AttemptRow, DeliveryRow, Subscriber } from "./webhook-admin.ts";
import type { WebhookEventType } from "./webhook-event.ts";

/**
 * Webhook rows as both backends read them: SQLite gives integers (0/1 for booleans), PostgreSQL
 * booleans and int8 as BigInt. Times are epoch milliseconds in the database, ISO text outside.
 */
type Integer = number | bigint;

export type StoredSubscriber = {
  id: string;
  url: string;
  /** SQLite: comma-separated text; PostgreSQL: an array. NULL: the bare new-plant payload only. */
  events: string | string[] | null;
  active: boolean | Integer;
  disabled_reason: string | null;
  created_at: Integer;
};

export type StoredDelivery = {
  id: Integer;
  message_id: string;
  type: string | null;
  subscriber_id: string;
  status: string;
  attempts: Integer;
  next_attempt_at: Integer;
  last_status: Integer | null;
  last_error: string | null;
};

export type StoredAttempt = {
  attempted_at: Integer;
  status_code: Integer | null;
  error: string | null;
  duration_ms: Integer;
};

const iso = (ms: Integer) => new Date(Number(ms)).toISOString();

export function subscriberFromRow(row: StoredSubscriber): Subscriber {
  return {
    id: row.id,
    url: row.url,
    events: (typeof row.events === "string" ? row.events.split(",") : row.events) as WebhookEventType[] | null,
    active: Number(row.active) === 1,
    disabledReason: row.disabled_reason,
    createdAt: iso(row.created_at),
  };
}

export function deliveryFromRow(row: StoredDelivery): DeliveryRow {
  return {
    id: Number(row.id),
    messageId: row.message_id,
    event: row.type as WebhookEventType | null,
    subscriberId: row.subscriber_id,
    status: row.status,
    attempts: Number(row.attempts),
    nextAttemptAt: iso(row.next_attempt_at),
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error,
  };
}

export function attemptFromRow(row: StoredAttempt): AttemptRow {
  return {
    attemptedAt: iso(row.attempted_at),
    statusCode: row.status_code === null ? null : Number(row.status_code),
    error: row.error,
    durationMs: Number(row.duration_ms),
  };
}

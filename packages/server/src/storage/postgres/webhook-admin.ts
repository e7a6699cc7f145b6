import type { Pool } from "pg";

import {
  type AttemptRow,
  type DeliveryRow,
  newSubscriberId,
  type ReplayOutcome,
  type Subscriber,
  type WebhookAdmin,
} from "../webhook-admin.ts";
import type { WebhookEventType } from "../webhook-event.ts";
import {
  attemptFromRow,
  deliveryFromRow,
  type StoredAttempt,
  type StoredDelivery,
  type StoredSubscriber,
  subscriberFromRow,
} from "../webhook-rows.ts";
import { createPostgresPool, inTransaction, type PostgresSettings, query } from "./pool.ts";

/** Webhook administration on PostgreSQL; every instance sees a change with its next write. */
export class PostgresWebhookAdmin implements WebhookAdmin {
  readonly #pool: Pool;

  constructor(settings: PostgresSettings) {
    this.#pool = createPostgresPool({
      ...settings,
      poolSize: 1,
      applicationName: settings.applicationName ?? "plantstore-admin",
    });
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  async add(url: string, secret: string, events?: readonly WebhookEventType[]): Promise<Subscriber> {
    const rows = await query<StoredSubscriber>(
      this.#pool,
      `INSERT INTO webhook_subscribers (id, url, secret, events, created_at) VALUES ($1, $2, $3, $4, $5)
       RETURNING id, url, events, active, disabled_reason, created_at`,
      [newSubscriberId(), url, secret, events ?? null, Date.now()],
    );
    return subscriberFromRow(rows[0]!);
  }

  async list(): Promise<Subscriber[]> {
    const rows = await query<StoredSubscriber>(
      this.#pool,
      "SELECT id, url, events, active, disabled_reason, created_at FROM webhook_subscribers ORDER BY created_at, id",
    );
    return rows.map(subscriberFromRow);
  }

  async remove(id: string): Promise<boolean> {
    return inTransaction(this.#pool, async (client) => {
      const removed = (await client.query("DELETE FROM webhook_subscribers WHERE id = $1", [id])).rowCount === 1;
      await client.query(
        "UPDATE webhook_deliveries SET status = 'cancelled', updated_at = $1 WHERE subscriber_id = $2 AND status = 'pending'",
        [Date.now(), id],
      );
      return removed;
    });
  }

  async deliveries(options: { failedOnly: boolean; limit: number }): Promise<DeliveryRow[]> {
    const where = options.failedOnly ? "WHERE d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0)" : "";
    const rows = await query<StoredDelivery>(
      this.#pool,
      `SELECT d.id, e.message_id, e.type, d.subscriber_id, d.status, d.attempts, d.next_attempt_at, d.last_status, d.last_error
       FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id ${where}
       ORDER BY d.id DESC LIMIT $1`,
      [options.limit],
    );
    return rows.map(deliveryFromRow);
  }

  async attempts(deliveryId: number): Promise<AttemptRow[]> {
    const rows = await query<StoredAttempt>(
      this.#pool,
      "SELECT attempted_at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id",
      [deliveryId],
    );
    return rows.map(attemptFromRow);
  }

  async replay(id: number): Promise<ReplayOutcome> {
    const now = Date.now();
    return inTransaction(this.#pool, async (client) => {
      // Should the subscriber be removed between this read and the update, the claim finds the
      // delivery orphaned and cancels it: nothing is sent either way.
      const { rows } = await client.query<{ active: boolean | null }>(
        `SELECT s.active FROM webhook_deliveries d LEFT JOIN webhook_subscribers s ON s.id = d.subscriber_id
         WHERE d.id = $1`,
        [id],
      );
      const row = rows[0];
      const outcome: ReplayOutcome =
        row === undefined
          ? "no_delivery"
          : row.active === null
            ? "subscriber_removed"
            : row.active
              ? "queued"
              : "subscriber_disabled";
      if (outcome === "queued") {
        await client.query(
          "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $1, lease_until = 0, updated_at = $1 WHERE id = $2",
          [now, id],
        );
      }
      return outcome;
    });
  }
}

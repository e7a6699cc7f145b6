import type { Pool } from "pg";

import type { AttemptRecord, ClaimedDelivery } from "../webhook-queue.ts";
import { inTransaction, query } from "./pool.ts";

/**
 * The outbox's delivery side on PostgreSQL, shared by every instance on the database. A claim
 * locks due rows with `FOR UPDATE SKIP LOCKED` (a second instance claiming at the same moment
 * skips them instead of waiting) and sets a lease, so no other instance picks the delivery up
 * until the lease runs out: one send per attempt in the normal case, and a crashed instance's
 * deliveries are retried by the others once its leases expire.
 */
export class PostgresWebhookQueue {
  readonly #pool: Pool;

  constructor(pool: Pool) {
    this.#pool = pool;
  }

  async hasDueDeliveries(now: number): Promise<boolean> {
    const rows = await query<{ due: boolean }>(
      this.#pool,
      `SELECT EXISTS (SELECT 1 FROM webhook_deliveries
                      WHERE status = 'pending' AND next_attempt_at <= $1 AND lease_until <= $1) AS due`,
      [now],
      // Every instance polls this twice a second: prepare it once per connection.
      "webhook_due",
    );
    return rows[0]?.due === true;
  }

  async claimDeliveries({
    now,
    leaseUntil,
    limit,
  }: {
    now: number;
    leaseUntil: number;
    limit: number;
  }): Promise<ClaimedDelivery[]> {
    const rows = await query<{
      id: bigint;
      attempts: number;
      subscriber_id: string;
      message_id: string;
      payload: string;
      created_at: bigint;
      url: string;
      secret: string;
    }>(
      this.#pool,
      `WITH due AS (
         SELECT id, subscriber_id FROM webhook_deliveries
         WHERE status = 'pending' AND next_attempt_at <= $1::bigint AND lease_until <= $1::bigint
         ORDER BY next_attempt_at
         LIMIT $3::integer
         FOR UPDATE SKIP LOCKED
       ), claimed AS (
         -- A delivery whose subscriber was removed or disabled meanwhile has nothing to send: it is
         -- cancelled here, or it would come first in every claim, ahead of deliveries that can be sent.
         UPDATE webhook_deliveries d
         SET lease_until = CASE WHEN s.active THEN $2::bigint ELSE 0 END,
             status      = CASE WHEN s.active THEN d.status ELSE 'cancelled' END,
             updated_at  = CASE WHEN s.active THEN d.updated_at ELSE $1::bigint END
         FROM due LEFT JOIN webhook_subscribers s ON s.id = due.subscriber_id
         WHERE d.id = due.id
         RETURNING d.id, d.event_id, d.subscriber_id, d.attempts, s.active IS TRUE AS sendable
       )
       SELECT c.id, c.attempts, c.subscriber_id, e.message_id, e.payload, e.created_at, s.url, s.secret
       FROM claimed c
       JOIN webhook_events e ON e.id = c.event_id
       JOIN webhook_subscribers s ON s.id = c.subscriber_id
       WHERE c.sendable`,
      [now, leaseUntil, limit],
    );
    return rows.map((row) => ({
      deliveryId: Number(row.id),
      attempts: row.attempts,
      messageId: row.message_id,
      payload: row.payload,
      createdAt: Number(row.created_at),
      subscriberId: row.subscriber_id,
      url: row.url,
      secret: row.secret,
    }));
  }

  async recordAttempt(a: AttemptRecord): Promise<void> {
    const status = a.result === "gone" ? "cancelled" : a.result;
    await inTransaction(this.#pool, async (client) => {
      await client.query(
        // A delivery cancelled while its attempt was in flight (subscriber removed, or 410 from
        // another attempt) stays cancelled: the attempt is recorded, the delivery not revived.
        `UPDATE webhook_deliveries
         SET status = CASE status WHEN 'cancelled' THEN 'cancelled' ELSE $1 END, attempts = attempts + 1,
             next_attempt_at = $2, lease_until = 0, last_status = $3, last_error = $4, updated_at = $5
         WHERE id = $6`,
        [status, a.nextAttemptAt, a.statusCode, a.error, a.attemptedAt, a.deliveryId],
      );
      await client.query(
        "INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms) VALUES ($1, $2, $3, $4, $5)",
        [a.deliveryId, a.attemptedAt, a.statusCode, a.error, a.durationMs],
      );
      if (a.result === "gone") {
        // 410 Gone: the receiver asks us to stop (Standard Webhooks); nothing more is sent to it.
        await client.query(
          "UPDATE webhook_subscribers SET active = false, disabled_reason = $1 WHERE id = $2 AND active",
          ["410 Gone from the receiver", a.subscriberId],
        );
        await client.query(
          "UPDATE webhook_deliveries SET status = 'cancelled', updated_at = $1 WHERE subscriber_id = $2 AND status = 'pending'",
          [a.attemptedAt, a.subscriberId],
        );
      }
    });
  }

  async webhookBacklog(): Promise<number> {
    const rows = await query<{ n: bigint }>(
      this.#pool,
      "SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'",
    );
    return Number(rows[0]?.n ?? 0n);
  }
}

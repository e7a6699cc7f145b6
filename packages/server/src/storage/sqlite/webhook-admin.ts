import type { DatabaseSync } from "node:sqlite";

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
import { openConnection } from "./open-connection.ts";

/** Webhook administration on a SQLite file: SQLite's locking keeps it consistent with a running server. */
export class SqliteWebhookAdmin implements WebhookAdmin {
  readonly #db: DatabaseSync;

  constructor(path: string) {
    this.#db = openConnection({ path });
  }

  async close(): Promise<void> {
    this.#db.close();
  }

  async add(url: string, secret: string, events?: readonly WebhookEventType[]): Promise<Subscriber> {
    const id = newSubscriberId();
    this.#db
      .prepare("INSERT INTO webhook_subscribers (id, url, secret, events, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(id, url, secret, events === undefined ? null : events.join(","), Date.now());
    return (await this.list()).find((s) => s.id === id)!;
  }

  async list(): Promise<Subscriber[]> {
    const rows = this.#db
      .prepare(
        "SELECT id, url, events, active, disabled_reason, created_at FROM webhook_subscribers ORDER BY created_at, id",
      )
      .all() as StoredSubscriber[];
    return rows.map(subscriberFromRow);
  }

  async remove(id: string): Promise<boolean> {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const removed = Number(this.#db.prepare("DELETE FROM webhook_subscribers WHERE id = ?").run(id).changes) === 1;
      this.#db
        .prepare(
          "UPDATE webhook_deliveries SET status = 'cancelled', updated_at = ? WHERE subscriber_id = ? AND status = 'pending'",
        )
        .run(Date.now(), id);
      this.#db.exec("COMMIT");
      return removed;
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  async deliveries(options: { failedOnly: boolean; limit: number }): Promise<DeliveryRow[]> {
    const where = options.failedOnly ? "WHERE d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0)" : "";
    const rows = this.#db
      .prepare(
        `SELECT d.id, e.message_id, e.type, d.subscriber_id, d.status, d.attempts, d.next_attempt_at, d.last_status, d.last_error
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id ${where}
         ORDER BY d.id DESC LIMIT ?`,
      )
      .all(options.limit) as StoredDelivery[];
    return rows.map(deliveryFromRow);
  }

  async attempts(deliveryId: number): Promise<AttemptRow[]> {
    const rows = this.#db
      .prepare(
        "SELECT attempted_at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = ? ORDER BY id",
      )
      .all(deliveryId) as StoredAttempt[];
    return rows.map(attemptFromRow);
  }

  async replay(id: number): Promise<ReplayOutcome> {
    const now = Date.now();
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const row = this.#db
        .prepare(
          `SELECT s.active FROM webhook_deliveries d LEFT JOIN webhook_subscribers s ON s.id = d.subscriber_id
           WHERE d.id = ?`,
        )
        .get(id) as { active: number | null } | undefined;
      const outcome =
        row === undefined
          ? "no_delivery"
          : row.active === null
            ? "subscriber_removed"
            : row.active === 1
              ? "queued"
              : "subscriber_disabled";
      if (outcome === "queued") {
        this.#db
          .prepare(
            "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, lease_until = 0, updated_at = ? WHERE id = ?",
          )
          .run(now, now, id);
      }
      this.#db.exec("COMMIT");
      return outcome;
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }
}

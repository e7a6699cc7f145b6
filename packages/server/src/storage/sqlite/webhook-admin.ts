import { randomBytes } from "node:crypto";
import { DatabaseSync } from "node:sqlite";

/**
 * Subscriber and delivery administration for `plantstore-server webhooks …`. It runs in its own
 * short-lived process beside a running server: SQLite's locking keeps the two consistent, and
 * the server's writer picks up new subscribers with its next batch.
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

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** Standard Webhooks secrets: `whsec_` and base64 of 24 to 64 random bytes. */
export function checkWebhookSecret(secret: string): void {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  const bytes = match?.[1] === undefined ? 0 : Buffer.from(match[1], "base64").length;
  if (bytes < 24 || bytes > 64) throw new Error("a secret must be whsec_ followed by base64 of 24 to 64 bytes");
}

export class WebhookAdmin {
  readonly #db: DatabaseSync;

  constructor(path: string) {
    this.#db = new DatabaseSync(path);
    this.#db.exec("PRAGMA busy_timeout = 5000");
  }

  close(): void {
    this.#db.close();
  }

  add(url: string, secret: string): Subscriber {
    const id = `whk_${randomBytes(9).toString("base64url")}`;
    this.#db.prepare("INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES (?, ?, ?, ?)").run(id, url, secret, Date.now());
    return this.list().find((s) => s.id === id)!;
  }

  list(): Subscriber[] {
    const rows = this.#db
      .prepare("SELECT id, url, active, disabled_reason, created_at FROM webhook_subscribers ORDER BY created_at, id")
      .all() as Array<{ id: string; url: string; active: number; disabled_reason: string | null; created_at: number }>;
    return rows.map((r) => ({
      id: r.id,
      url: r.url,
      active: r.active === 1,
      disabledReason: r.disabled_reason,
      createdAt: new Date(Number(r.created_at)).toISOString(),
    }));
  }

  /** Removes the subscriber; its pending deliveries are cancelled, their history kept. */
  remove(id: string): boolean {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const removed = Number(this.#db.prepare("DELETE FROM webhook_subscribers WHERE id = ?").run(id).changes) === 1;
      this.#db
        .prepare("UPDATE webhook_deliveries SET status = 'cancelled', updated_at = ? WHERE subscriber_id = ? AND status = 'pending'")
        .run(Date.now(), id);
      this.#db.exec("COMMIT");
      return removed;
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  deliveries(options: { failedOnly: boolean; limit: number }): DeliveryRow[] {
    const where = options.failedOnly ? "WHERE d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0)" : "";
    const rows = this.#db
      .prepare(
        `SELECT d.id, e.message_id, d.subscriber_id, d.status, d.attempts, d.next_attempt_at, d.last_status, d.last_error
         FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id ${where}
         ORDER BY d.id DESC LIMIT ?`,
      )
      .all(options.limit) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      id: Number(r["id"]),
      messageId: String(r["message_id"]),
      subscriberId: String(r["subscriber_id"]),
      status: String(r["status"]),
      attempts: Number(r["attempts"]),
      nextAttemptAt: new Date(Number(r["next_attempt_at"])).toISOString(),
      lastStatus: r["last_status"] === null ? null : Number(r["last_status"]),
      lastError: r["last_error"] === null ? null : String(r["last_error"]),
    }));
  }

  /** Every recorded attempt of a delivery, oldest first. */
  attempts(deliveryId: number): AttemptRow[] {
    const rows = this.#db
      .prepare("SELECT attempted_at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = ? ORDER BY id")
      .all(deliveryId) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      attemptedAt: new Date(Number(r["attempted_at"])).toISOString(),
      statusCode: r["status_code"] === null ? null : Number(r["status_code"]),
      error: r["error"] === null ? null : String(r["error"]),
      durationMs: Number(r["duration_ms"]),
    }));
  }

  /**
   * Queues a delivery to be sent again now (same webhook-id), whatever its state, unless there is
   * no such delivery or its subscriber was removed or disabled since (nothing could be sent).
   */
  replay(id: number): "queued" | "no_delivery" | "subscriber_removed" | "subscriber_disabled" {
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
        row === undefined ? "no_delivery" : row.active === null ? "subscriber_removed" : row.active === 1 ? "queued" : "subscriber_disabled";
      if (outcome === "queued") {
        this.#db
          .prepare("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, lease_until = 0, updated_at = ? WHERE id = ?")
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

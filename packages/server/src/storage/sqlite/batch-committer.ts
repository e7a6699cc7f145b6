import type { DatabaseSync } from "node:sqlite";

import type { ChangeKind } from "../../changes/change-log.ts";
import type { ItemFailure } from "../group-commit.ts";
import type { PlantETags } from "../plant-etag.ts";
import { patchedRow, plantFromRow, type PlantRow, samePlant } from "../plant-rows.ts";
import type { CreateOutcome, DeleteOutcome, IfMatch, PreconditionFailed, WriteOutcome } from "../plant-store.ts";
import {
  deletedPlantData,
  eventEnvelope,
  newMessageId,
  newPlantPayload,
  WEBHOOK_EVENT_TYPES,
  type WebhookEventType,
} from "../webhook-event.ts";
import { sqliteFailure } from "./sqlite-errors.ts";
import type {
  AttemptRecord,
  BatchRequest,
  BatchResult,
  ClaimedDelivery,
  ItemResult,
  WriteOp,
} from "./writer-protocol.ts";

/** Whether any active subscriber takes the bare new-plant payload, and each event type. */
type Audience = Record<"bare" | WebhookEventType, boolean>;

/**
 * Commits one batch of writes (creations, deletions and webhook bookkeeping, in arrival order) in
 * one transaction (one fsync). A statement that fails alone fails alone; a failure that ends the
 * transaction fails the whole batch and stores none of it.
 */
export function createBatchCommitter(db: DatabaseSync, etags: PlantETags): (request: BatchRequest) => BatchResult {
  const insert = db.prepare("INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING");
  const select = db.prepare("SELECT name, tag FROM plants WHERE id = ?");
  const selectRow = db.prepare("SELECT id, name, tag FROM plants WHERE id = ?");
  const remove = db.prepare("DELETE FROM plants WHERE id = ? RETURNING tag");
  const rewrite = db.prepare("UPDATE plants SET name = ?, tag = ? WHERE id = ?");
  // Who is listening, read once per batch that writes anything to announce: bare (legacy)
  // subscribers of new plants, and those that chose each event type.
  const chose = (type: WebhookEventType) => `count(*) FILTER (WHERE instr(',' || events || ',', ',${type},') > 0)`;
  const audienceOf = db.prepare(
    `SELECT count(*) FILTER (WHERE events IS NULL) AS bare, ${WEBHOOK_EVENT_TYPES.map((t) => `${chose(t)} AS "${t}"`).join(", ")}
     FROM webhook_subscribers WHERE active = 1`,
  );
  const insertEvent = db.prepare(
    "INSERT INTO webhook_events (message_id, type, payload, created_at, change_position) VALUES (?, ?, ?, ?, ?)",
  );
  // The position is the next rowid: this writer holds the database's write lock (BEGIN IMMEDIATE)
  // until it commits, across processes too, so positions follow commit order by construction.
  const insertChange = db.prepare(
    "INSERT INTO plant_changes (kind, plant_id, data, tag, previous_tag, at) VALUES (?, ?, ?, ?, ?, ?)",
  );
  // See change-rows.ts: the walk stops at the first change within the retention, and the newest stays.
  const pruneChanges = db.prepare(
    `DELETE FROM plant_changes WHERE position IN (
       SELECT position FROM plant_changes
       WHERE position < coalesce(
         (SELECT position FROM plant_changes WHERE at >= ? ORDER BY position LIMIT 1),
         (SELECT max(position) FROM plant_changes))
       ORDER BY position LIMIT ?)`,
  );
  const insertBareDeliveries = db.prepare(
    `INSERT INTO webhook_deliveries (event_id, subscriber_id, status, next_attempt_at, updated_at)
     SELECT ?, id, 'pending', ?, ? FROM webhook_subscribers WHERE active = 1 AND events IS NULL`,
  );
  const insertTypedDeliveries = db.prepare(
    `INSERT INTO webhook_deliveries (event_id, subscriber_id, status, next_attempt_at, updated_at)
     SELECT ?, id, 'pending', ?, ? FROM webhook_subscribers WHERE active = 1 AND instr(',' || events || ',', ?) > 0`,
  );
  const claim = db.prepare(
    `UPDATE webhook_deliveries SET lease_until = ?
     WHERE id IN (SELECT id FROM webhook_deliveries
                  WHERE status = 'pending' AND next_attempt_at <= ? AND lease_until <= ?
                  ORDER BY next_attempt_at LIMIT ?)
     RETURNING id, event_id, subscriber_id, attempts`,
  );
  const claimDetails = db.prepare(
    `SELECT e.message_id, e.payload, e.created_at, s.url, s.secret
     FROM webhook_events e, webhook_subscribers s WHERE e.id = ? AND s.id = ? AND s.active = 1`,
  );
  const cancelDelivery = db.prepare(
    "UPDATE webhook_deliveries SET status = 'cancelled', lease_until = 0, updated_at = ? WHERE id = ?",
  );
  // A delivery cancelled while its attempt was in flight (subscriber removed, or 410 from another
  // attempt) stays cancelled: the attempt is recorded, the delivery is not revived.
  const updateDelivery = db.prepare(
    `UPDATE webhook_deliveries
     SET status = CASE status WHEN 'cancelled' THEN 'cancelled' ELSE ? END, attempts = attempts + 1,
         next_attempt_at = ?, lease_until = 0, last_status = ?, last_error = ?, updated_at = ?
     WHERE id = ?`,
  );
  const insertAttempt = db.prepare(
    "INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?)",
  );
  const disableSubscriber = db.prepare(
    "UPDATE webhook_subscribers SET active = 0, disabled_reason = ? WHERE id = ? AND active = 1",
  );
  const cancelPending = db.prepare(
    "UPDATE webhook_deliveries SET status = 'cancelled', updated_at = ? WHERE subscriber_id = ? AND status = 'pending'",
  );
  const probe = db.prepare(
    "INSERT INTO write_probe (id, probed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
  );

  let eventsWritten = 0;
  let changesWritten = 0;
  let audienceInBatch: Audience | undefined;
  const audience = (): Audience => {
    if (audienceInBatch !== undefined) return audienceInBatch;
    const counts = audienceOf.get() as Record<keyof Audience, number | bigint>;
    audienceInBatch = {
      bare: Number(counts.bare) > 0,
      "plant.created": Number(counts["plant.created"]) > 0,
      "plant.updated": Number(counts["plant.updated"]) > 0,
      "plant.deleted": Number(counts["plant.deleted"]) > 0,
    };
    return audienceInBatch;
  };

  /**
   * One change of a plant, in this transaction: its row in the change log, and the webhook events
   * of the subscribers that want it (the outbox), all with the same JSON, time and position.
   * Without subscribers the events cost one read per batch.
   */
  const recordChange = (
    kind: ChangeKind,
    plantId: bigint,
    data: string,
    tag: string | null,
    previousTag: string | null,
  ): void => {
    const now = Date.now();
    const position = insertChange.run(kind, plantId, data, tag, previousTag, now).lastInsertRowid;
    changesWritten++;
    const who = audience();
    if (kind === "plant.created" && who.bare) {
      // Exactly the payload subscribers received before event types existed.
      const event = insertEvent.run(newMessageId(), null, data, now, position);
      insertBareDeliveries.run(event.lastInsertRowid, now, now);
      eventsWritten++;
    }
    if (who[kind]) {
      const event = insertEvent.run(newMessageId(), kind, eventEnvelope(kind, now, data), now, position);
      insertTypedDeliveries.run(event.lastInsertRowid, now, now, `,${kind},`);
      eventsWritten++;
    }
  };

  const insertOne = (plant: PlantRow): CreateOutcome => {
    // The primary key decides: a second row is refused, and only then do we compare contents.
    const { changes } = insert.run(plant.id, plant.name, plant.tag);
    if (Number(changes) === 1) {
      // Only a new plant is announced (never a replay).
      recordChange("plant.created", plant.id, newPlantPayload(plant), plant.tag, null);
      return "created";
    }
    const existing = select.get(plant.id) as Omit<PlantRow, "id"> | undefined;
    if (existing !== undefined && samePlant(existing, plant)) return "replayed";
    return "conflict";
  };

  /**
   * Reads the plant and checks `ifMatch` and `ifNoneMatch` inside this batch's transaction, which
   * holds SQLite's write lock (BEGIN IMMEDIATE): nothing, in this process or another, writes
   * between the check and the write.
   */
  const checked = (
    id: bigint,
    ifMatch: IfMatch,
    ifNoneMatch: IfMatch | undefined,
  ): PlantRow | PreconditionFailed | undefined => {
    const row = selectRow.get(id) as PlantRow | undefined;
    if (row === undefined) return row;
    const current = plantFromRow(row);
    if (etags.holds(ifMatch, current) && etags.holdsNone(ifNoneMatch, current)) return row;
    return { outcome: "precondition_failed", current };
  };

  /** Writes `wanted` over `row`, or nothing when it changes nothing (a no-op is no write, no change and no event). */
  const rewriteRow = (row: PlantRow, wanted: PlantRow): WriteOutcome => {
    if (!samePlant(row, wanted)) {
      rewrite.run(wanted.name, wanted.tag, wanted.id);
      recordChange("plant.updated", wanted.id, newPlantPayload(wanted), wanted.tag, row.tag);
    }
    return { outcome: "written", plant: plantFromRow(wanted), created: false };
  };

  const update = (op: Extract<WriteOp, { op: "update" }>): WriteOutcome => {
    const row = checked(op.id, op.ifMatch, op.ifNoneMatch);
    if (row === undefined) return { outcome: "not_found" };
    if ("outcome" in row) return row;
    return rewriteRow(row, patchedRow(row, op.change));
  };

  const replace = (op: Extract<WriteOp, { op: "replace" }>): WriteOutcome => {
    const wanted: PlantRow = { id: op.id, name: op.name, tag: op.tag };
    if (op.ifMatch === undefined) {
      if (insertOne(wanted) === "created") return { outcome: "written", plant: plantFromRow(wanted), created: true };
      const current = selectRow.get(op.id) as PlantRow;
      return { outcome: "precondition_failed", current: plantFromRow(current) };
    }
    const row = checked(op.id, op.ifMatch, op.ifNoneMatch);
    // A free id fails If-Match (RFC 9110 §13.1.1): nothing is there to match.
    if (row === undefined) return { outcome: "precondition_failed", current: undefined };
    if ("outcome" in row) return row;
    return rewriteRow(row, wanted);
  };

  const deleteOne = (id: bigint, ifMatch: IfMatch | undefined, ifNoneMatch: IfMatch | undefined): ItemResult => {
    if (ifMatch !== undefined || ifNoneMatch !== undefined) {
      // No If-Match holds for any stored plant, as `*` does.
      const row = checked(id, ifMatch ?? "*", ifNoneMatch);
      if (row !== undefined && "outcome" in row) return { write: row };
    }
    const removed = remove.get(id) as { tag: string | null } | undefined;
    if (removed === undefined) return { outcome: "not_found" satisfies DeleteOutcome };
    recordChange("plant.deleted", id, deletedPlantData(id), null, removed.tag);
    return { outcome: "deleted" satisfies DeleteOutcome };
  };

  const claimDeliveries = (now: number, leaseUntil: number, limit: number): ClaimedDelivery[] => {
    const rows = claim.all(leaseUntil, now, now, limit) as Array<{
      id: number | bigint;
      event_id: number | bigint;
      subscriber_id: string;
      attempts: number | bigint;
    }>;
    return rows.flatMap((row) => {
      const details = claimDetails.get(row.event_id, row.subscriber_id) as
        { message_id: string; payload: string; created_at: number | bigint; url: string; secret: string } | undefined;
      if (details === undefined) {
        // Its subscriber was removed or disabled meanwhile: nothing to send, and it must not be
        // claimed again (it would come first in every claim, ahead of deliveries that can be sent).
        cancelDelivery.run(now, row.id);
        return [];
      }
      return {
        deliveryId: Number(row.id),
        attempts: Number(row.attempts),
        messageId: details.message_id,
        payload: details.payload,
        createdAt: Number(details.created_at),
        subscriberId: row.subscriber_id,
        url: details.url,
        secret: details.secret,
      };
    });
  };

  const recordAttempt = (a: AttemptRecord): void => {
    const status = a.result === "gone" ? "cancelled" : a.result;
    updateDelivery.run(status, a.nextAttemptAt, a.statusCode, a.error, a.attemptedAt, a.deliveryId);
    insertAttempt.run(a.deliveryId, a.attemptedAt, a.statusCode, a.error, a.durationMs);
    if (a.result === "gone") {
      // 410 Gone: the receiver asks us to stop (Standard Webhooks); nothing more is sent to it.
      disableSubscriber.run("410 Gone from the receiver", a.subscriberId);
      cancelPending.run(a.attemptedAt, a.subscriberId);
    }
  };

  const apply = (op: WriteOp): ItemResult => {
    switch (op.op) {
      case "create":
        return { outcome: insertOne(op) };
      case "delete":
        return deleteOne(op.id, op.ifMatch, op.ifNoneMatch);
      case "update":
        return { write: update(op) };
      case "replace":
        return { write: replace(op) };
      case "claimDeliveries":
        return { claimed: claimDeliveries(op.now, op.leaseUntil, op.limit) };
      case "recordAttempt":
        recordAttempt(op.attempt);
        return { recorded: true };
      case "probe":
        probe.run(op.at);
        return { probed: true };
      case "pruneChanges":
        return { pruned: Number(pruneChanges.run(op.before, op.limit).changes) };
    }
  };

  const failed = (batchId: number, error: unknown): BatchResult => ({
    kind: "failed",
    batchId,
    error: String(error),
    failure: sqliteFailure(error),
  });

  return (request) => {
    const started = performance.now();
    eventsWritten = 0;
    changesWritten = 0;
    audienceInBatch = undefined;
    try {
      db.exec("BEGIN IMMEDIATE");
    } catch (error) {
      return failed(request.batchId, error);
    }
    const results: Array<ItemResult | ItemFailure> = [];
    // The failure that ended the transaction, if one did: the batch fails with its cause (a full
    // disk, a lock), not with a generic "rolled back".
    let ended: unknown;
    for (const op of request.ops) {
      try {
        results.push(apply(op));
      } catch (error) {
        results.push({ error: String(error), failure: sqliteFailure(error) });
        // Stop if the failure ended the transaction, or later rows would autocommit one by one.
        if (!db.isTransaction) {
          ended = error;
          break;
        }
      }
    }
    try {
      if (!db.isTransaction)
        throw ended instanceof Error
          ? ended
          : new Error("the transaction was rolled back during the batch", { cause: ended });
      db.exec("COMMIT");
    } catch (error) {
      try {
        if (db.isTransaction) db.exec("ROLLBACK");
      } catch {
        // A rollback that fails (an I/O error) leaves SQLite to roll the journal back on the next
        // transaction; the batch fails either way, with the error that ended it.
      }
      return failed(request.batchId, error);
    }
    return {
      kind: "committed",
      batchId: request.batchId,
      results,
      commitMs: performance.now() - started,
      eventsWritten,
      changesWritten,
    };
  };
}

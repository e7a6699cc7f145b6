import type { DatabaseSync } from "node:sqlite";
import type { CreateOutcome, DeleteOutcome } from "../plant-store.ts";
import type { BatchRequest, BatchResult, ItemResult, WriteOp } from "./writer-protocol.ts";

/**
 * Commits one batch of writes (creations and deletions, in arrival order) in one transaction (one fsync). A statement that fails alone
 * fails alone; a failure that ends the transaction fails the whole batch and stores none of it.
 */
export function createBatchCommitter(db: DatabaseSync): (request: BatchRequest) => BatchResult {
  const insert = db.prepare("INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING");
  const select = db.prepare("SELECT name, tag FROM plants WHERE id = ?");
  const remove = db.prepare("DELETE FROM plants WHERE id = ?");

  const apply = (op: WriteOp): CreateOutcome | DeleteOutcome => {
    if (op.op === "delete") return Number(remove.run(op.id).changes) === 1 ? "deleted" : "not_found";
    return insertOne(op);
  };

  const insertOne = (plant: { id: bigint; name: string; tag: string | null }): CreateOutcome => {
    // The primary key decides: a second row is refused, and only then do we compare contents.
    const { changes } = insert.run(plant.id, plant.name, plant.tag);
    if (Number(changes) === 1) return "created";
    const existing = select.get(plant.id) as { name: string; tag: string | null } | undefined;
    if (existing !== undefined && existing.name === plant.name && existing.tag === plant.tag) return "replayed";
    return "conflict";
  };

  return (request) => {
    const started = performance.now();
    try {
      db.exec("BEGIN IMMEDIATE");
    } catch (error) {
      return { kind: "failed", batchId: request.batchId, error: String(error) };
    }
    const results: ItemResult[] = [];
    for (const op of request.ops) {
      try {
        results.push({ outcome: apply(op) });
      } catch (error) {
        results.push({ error: String(error) });
        // Stop if the failure ended the transaction, or later rows would autocommit one by one.
        if (!db.isTransaction) break;
      }
    }
    try {
      if (!db.isTransaction) throw new Error("the transaction was rolled back during the batch");
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      return { kind: "failed", batchId: request.batchId, error: String(error) };
    }
    return { kind: "committed", batchId: request.batchId, results, commitMs: performance.now() - started };
  };
}

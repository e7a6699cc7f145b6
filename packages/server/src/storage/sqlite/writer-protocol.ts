import type { ItemFailure } from "../group-commit.ts";
import type { CreateOutcome, DeleteOutcome, IfMatch, PlantChange, WriteOutcome } from "../plant-store.ts";
import type { StoreFailure } from "../store-errors.ts";
import type { AttemptRecord, ClaimedDelivery } from "../webhook-queue.ts";

export type { AttemptRecord, ClaimedDelivery };

/** Messages between SqliteStore (main thread) and its writer thread. Plain data: structured-cloned. */
export type WriterInit = {
  path: string;
  synchronous: "FULL" | "NORMAL";
  busyTimeoutMs: number;
  /** The store's ETag secret, read by the main thread when it opened the store. */
  etagSecret: Uint8Array;
};

export type BatchRequest = {
  kind: "batch";
  batchId: number;
  ops: WriteOp[];
};

export type WriteOp =
  | { op: "create"; id: bigint; name: string; tag: string | null }
  | { op: "delete"; id: bigint; ifMatch?: IfMatch | undefined; ifNoneMatch?: IfMatch | undefined }
  | { op: "update"; id: bigint; change: PlantChange; ifMatch: IfMatch; ifNoneMatch?: IfMatch | undefined }
  /** Without `ifMatch`: only if the id is free (`If-None-Match: *`). */
  | {
      op: "replace";
      id: bigint;
      name: string;
      tag: string | null;
      ifMatch?: IfMatch | undefined;
      ifNoneMatch?: IfMatch | undefined;
    }
  | { op: "claimDeliveries"; now: number; leaseUntil: number; limit: number }
  | { op: "recordAttempt"; attempt: AttemptRecord }
  /** A tiny write that proves writes commit again (readiness, after a failure). */
  | { op: "probe"; at: number }
  /** Retention: up to `limit` changes recorded before `before` (ms) go, never the newest. */
  | { op: "pruneChanges"; before: number; limit: number };

export type CloseRequest = { kind: "close" };

/** What one write answered; a failure of that write alone (the rest of its batch committed) is an ItemFailure. */
export type ItemResult =
  | { outcome: CreateOutcome | DeleteOutcome }
  /** A conditional write's outcome (update, replace, or a delete whose condition failed). */
  | { write: WriteOutcome }
  | { claimed: ClaimedDelivery[] }
  | { recorded: true }
  | { probed: true }
  | { pruned: number };

export type BatchResult =
  | {
      kind: "committed";
      batchId: number;
      results: Array<ItemResult | ItemFailure>;
      commitMs: number;
      eventsWritten: number;
      /** Changes the batch added to the change log: the store wakes the feed when there are any. */
      changesWritten: number;
    }
  /** `failure` when the storage failed (full, locked, …): an Error's own properties do not survive postMessage. */
  | { kind: "failed"; batchId: number; error: string; failure?: StoreFailure | undefined };

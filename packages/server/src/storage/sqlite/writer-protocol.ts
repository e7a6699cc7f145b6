import type { CreateOutcome, DeleteOutcome } from "../plant-store.ts";

/** Messages between SqliteStore (main thread) and its writer thread. Plain data: structured-cloned. */
export type WriterInit = { path: string; synchronous: "FULL" | "NORMAL" };

export type BatchRequest = {
  kind: "batch";
  batchId: number;
  ops: WriteOp[];
};

export type WriteOp =
  | { op: "create"; id: bigint; name: string; tag: string | null }
  | { op: "delete"; id: bigint }
  | { op: "claimDeliveries"; now: number; leaseUntil: number; limit: number }
  | { op: "recordAttempt"; attempt: AttemptRecord };

/** A delivery the dispatcher holds a lease on, with what it needs to send it. */
export type ClaimedDelivery = {
  deliveryId: number;
  attempts: number;
  messageId: string;
  payload: string;
  createdAt: number;
  subscriberId: string;
  url: string;
  secret: string;
};

export type AttemptRecord = {
  deliveryId: number;
  subscriberId: string;
  attemptedAt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  /** `delivered`, `pending` (retry at nextAttemptAt), `failed` (gave up) or `gone` (410: disable the subscriber). */
  result: "delivered" | "pending" | "failed" | "gone";
  nextAttemptAt: number;
};

export type CloseRequest = { kind: "close" };

export type ItemResult =
  | { outcome: CreateOutcome | DeleteOutcome }
  | { claimed: ClaimedDelivery[] }
  | { recorded: true }
  | { error: string };

export type BatchResult =
  | { kind: "committed"; batchId: number; results: ItemResult[]; commitMs: number; eventsWritten: number }
  | { kind: "failed"; batchId: number; error: string };

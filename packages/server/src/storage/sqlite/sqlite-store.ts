import type { DatabaseSync, StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";

import type { NewPlant } from "@plantstore/schema";

import type { Change, ChangeLog } from "../../changes/change-log.ts";
import { CHANGE_COLUMNS, changeFromRow, type ChangeRetention, logBounds, type StoredChange } from "../change-rows.ts";
import { type CommittedBatch, GroupCommit } from "../group-commit.ts";
import { migrationStatus } from "../migrations.ts";
import { ETAG_SECRET_NAME, newETagSecret, PlantETags } from "../plant-etag.ts";
import { listedFromRow, plantFromRow, type PlantRow, type PlantRowArray } from "../plant-rows.ts";
import type {
  CreateOutcome,
  DeleteOutcome,
  IfMatch,
  ListedPlant,
  ListOptions,
  MigrationStatus,
  PlantChange,
  PlantStore,
  PreconditionFailed,
  WriteOutcome,
} from "../plant-store.ts";
import { storeError } from "../store-errors.ts";
import type { WebhookQueue } from "../webhook-queue.ts";
import type { WriteHealth } from "../write-health.ts";
import { createBatchCommitter } from "./batch-committer.ts";
import { migrateSqlite } from "./migrations.ts";
import { DEFAULT_BUSY_TIMEOUT_MS, openConnection } from "./open-connection.ts";
import { asSqliteStoreError } from "./sqlite-errors.ts";
import { storeSecret } from "./store-secrets.ts";
import type {
  AttemptRecord,
  BatchRequest,
  BatchResult,
  ClaimedDelivery,
  CloseRequest,
  ItemResult,
  WriteOp,
  WriterInit,
} from "./writer-protocol.ts";

/**
 * `full`: every answered write is on disk (fsync at each commit) and survives power loss.
 * `normal`: WAL with `synchronous=NORMAL`: survives a crash of this process, but the last
 * commits before a power loss or OS crash can be lost; faster when commits are small.
 */
export type Durability = "full" | "normal";

export type SqliteStoreOptions = {
  /** A file path, or `:memory:` (then commits run on the calling thread). */
  path: string;
  durability?: Durability;
  /** Most inserts one transaction takes; the rest wait for the next one. */
  maxBatchSize?: number;
  /** Called after every commit, for metrics. */
  onCommit?: (batchSize: number, commitMs: number) => void;
  /**
   * How long a write waits for a lock another connection (another process, the `sqlite3` shell)
   * holds before it fails with a "busy" StoreError (503 STORAGE_BUSY). Default 5000.
   */
  busyTimeoutMs?: number;
  /** Told how each write batch went, for readiness. */
  writeHealth?: WriteHealth;
};

/**
 * Rows as arrays where node:sqlite can (Node >= 22.16): no object with named keys built per row
 * only to be copied into a plant. A page of 101 rows took about half the time this way.
 */
function rowsAsArrays(statement: StatementSync): StatementSync {
  const withArrays = statement as StatementSync & { setReturnArrays?: (enabled: boolean) => void };
  withArrays.setReturnArrays?.(true);
  return statement;
}

type ListStatements = Record<"all" | "after" | "tag" | "tagAfter", StatementSync>;

/** One statement per filter combination, so each uses its index (the primary key, or (tag, id)). */
function listStatements(db: DatabaseSync, readBigInts: boolean): ListStatements {
  const prepare = (sql: string) => {
    const statement = rowsAsArrays(db.prepare(sql));
    statement.setReadBigInts(readBigInts);
    return statement;
  };
  const columns = "SELECT id, name, tag FROM plants";
  return {
    all: prepare(`${columns} ORDER BY id LIMIT ?`),
    after: prepare(`${columns} WHERE id > ? ORDER BY id LIMIT ?`),
    tag: prepare(`${columns} WHERE tag = ? ORDER BY id LIMIT ?`),
    tagAfter: prepare(`${columns} WHERE tag = ? AND id > ? ORDER BY id LIMIT ?`),
  };
}

function isOutOfRange(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === "ERR_OUT_OF_RANGE";
}

function inexact(row: PlantRowArray | PlantRow | undefined): boolean {
  const id = Array.isArray(row) ? row[0] : row?.id;
  return typeof id === "number" && !Number.isSafeInteger(id);
}

/**
 * Whether a page read with ids as numbers holds one that is not exact. node:sqlite raises
 * ERR_OUT_OF_RANGE for ids beyond ±2^53, except INT64_MIN: its range check takes `std::abs`,
 * which overflows there, and the id comes back as the rounded number -2^63 (Node 24.21). So the
 * values decide, not the exception. Rows are ordered by id, so the page's smallest and largest
 * ids are its ends, and two checks cover every row.
 */
function holdsInexactId(rows: Array<PlantRowArray | PlantRow>): boolean {
  return inexact(rows[0]) || inexact(rows.at(-1));
}

// Under vitest and `dev` this module runs from its .ts source, built it is .js: start the writer alike.
const WRITER_URL = new URL(
  import.meta.url.endsWith(".ts") ? "./sqlite-writer.ts" : "./sqlite-writer.js",
  import.meta.url,
);

function page(statements: ListStatements, { limit, after, tag }: ListOptions): Array<PlantRowArray | PlantRow> {
  return (
    tag === undefined
      ? after === undefined
        ? statements.all.all(limit)
        : statements.after.all(after, limit)
      : after === undefined
        ? statements.tag.all(tag, limit)
        : statements.tagAfter.all(tag, after, limit)
  ) as Array<PlantRowArray | PlantRow>;
}

/**
 * The embedded default. Driver: Node's built-in `node:sqlite` (measured against better-sqlite3
 * 13, see the README): as fast or faster here, and no native addon to install.
 *
 * Writes (creations, deletions, webhook bookkeeping) go through the shared group commit
 * (../group-commit.ts), one batch at a time: the next batch queues while the previous one commits
 * on the writer thread, as one transaction with one fsync. Reads use their own connection on this
 * thread (WAL lets them run beside the writer).
 */
export class SqliteStore implements PlantStore, WebhookQueue, ChangeLog, ChangeRetention {
  readonly #db: DatabaseSync;
  readonly #select: StatementSync;
  // Pages read ids as numbers (see ListedPlant); a page holding an id beyond ±2^53 is read again as bigints
  // (see holdsInexactId).
  readonly #listStatements: ListStatements;
  readonly #listStatementsBigInt: ListStatements;
  readonly #init: WriterInit;
  readonly #etags: PlantETags;
  readonly #inline: ((request: BatchRequest) => BatchResult) | undefined;
  readonly #writes: GroupCommit<WriteOp, ItemResult>;
  #writer: Worker | undefined;
  #inFlight:
    | { batchId: number; resolve: (batch: CommittedBatch<ItemResult>) => void; reject: (error: unknown) => void }
    | undefined;
  #nextBatchId = 1;
  readonly #eventListeners: Array<() => void> = [];
  readonly #changeListeners = new Set<() => void>();
  #changeStatements: Record<"after" | "bounds", StatementSync> | undefined;
  #dueStatement: StatementSync | undefined;

  private constructor(db: DatabaseSync, options: SqliteStoreOptions, inMemory: boolean, etagSecret: Uint8Array) {
    this.#db = db;
    this.#etags = new PlantETags(etagSecret);
    // An in-memory database exists only on this connection: it commits here (there is no fsync to hide).
    this.#inline = inMemory ? createBatchCommitter(db, this.#etags) : undefined;
    this.#select = db.prepare("SELECT id, name, tag FROM plants WHERE id = ?");
    this.#listStatements = listStatements(db, false);
    this.#listStatementsBigInt = listStatements(db, true);
    this.#writes = new GroupCommit({
      commit: (ops) => this.#commit(ops),
      maxBatchSize: options.maxBatchSize ?? 1024,
      // One writer: the next batch gathers while this one commits.
      maxBatchesInFlight: 1,
      onCommit: options.onCommit,
      health: options.writeHealth,
      storesPlants: ({ op }) => op === "create" || op === "update" || op === "replace" || op === "delete",
    });
    this.#init = {
      path: options.path,
      synchronous: options.durability === "normal" ? "NORMAL" : "FULL",
      busyTimeoutMs: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS,
      etagSecret,
    };
  }

  static open(options: SqliteStoreOptions): SqliteStore {
    const inMemory = options.path === ":memory:";
    // Reads on this connection never wait for the writer (WAL); a migration at start may.
    const db = openConnection({
      path: options.path,
      busyTimeoutMs: options.busyTimeoutMs,
      synchronous: options.durability === "normal" ? "NORMAL" : "FULL",
      readBigInts: true,
    });
    let etagSecret: Uint8Array;
    try {
      migrateSqlite(db);
      etagSecret = storeSecret(db, ETAG_SECRET_NAME, newETagSecret);
    } catch (error) {
      db.close();
      throw error;
    }
    return new SqliteStore(db, options, inMemory, etagSecret);
  }

  async etag(plant: NewPlant): Promise<string> {
    return this.#etags.of(plant);
  }

  async create(plant: NewPlant): Promise<CreateOutcome> {
    const result = await this.#writes.submit({ op: "create", id: plant.id, name: plant.name, tag: plant.tag ?? null });
    return (result as { outcome: CreateOutcome }).outcome;
  }

  // Conditional writes queue with the creations: the writer checks and writes each inside its
  // batch's transaction, so the check and the write are one atomic step.
  async update(id: bigint, change: PlantChange, ifMatch: IfMatch, ifNoneMatch?: IfMatch): Promise<WriteOutcome> {
    const result = await this.#writes.submit({ op: "update", id, change, ifMatch, ifNoneMatch });
    return (result as { write: WriteOutcome }).write;
  }

  async replace(
    plant: NewPlant,
    precondition: { ifMatch: IfMatch; ifNoneMatch?: IfMatch | undefined } | { ifNoneMatch: "*" },
  ): Promise<WriteOutcome> {
    const ifMatch = "ifMatch" in precondition ? precondition.ifMatch : undefined;
    const result = await this.#writes.submit({
      op: "replace",
      id: plant.id,
      name: plant.name,
      tag: plant.tag ?? null,
      ifMatch,
      ifNoneMatch: precondition.ifNoneMatch,
    });
    return (result as { write: WriteOutcome }).write;
  }

  async delete(id: bigint, ifMatch?: IfMatch, ifNoneMatch?: IfMatch): Promise<DeleteOutcome | PreconditionFailed> {
    const result = await this.#writes.submit({ op: "delete", id, ifMatch, ifNoneMatch });
    return "write" in result ? (result.write as PreconditionFailed) : (result as { outcome: DeleteOutcome }).outcome;
  }

  async claimDeliveries(options: { now: number; leaseUntil: number; limit: number }): Promise<ClaimedDelivery[]> {
    const result = await this.#writes.submit({ op: "claimDeliveries", ...options });
    return (result as { claimed: ClaimedDelivery[] }).claimed;
  }

  async recordAttempt(attempt: AttemptRecord): Promise<void> {
    await this.#writes.submit({ op: "recordAttempt", attempt });
  }

  /** A one-row write, committed like any other on the writer thread: proves writes commit. */
  async probeWrite(): Promise<void> {
    await this.#writes.submit({ op: "probe", at: Date.now() });
  }

  async hasDueDeliveries(now: number): Promise<boolean> {
    return this.#read(() => {
      this.#dueStatement ??= this.#db.prepare(
        "SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? AND lease_until <= ? LIMIT 1",
      );
      return this.#dueStatement.get(now, now) !== undefined;
    });
  }

  /** A read on this thread's connection, its storage failures (I/O, a damaged file) thrown as StoreErrors. */
  #read<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      throw asSqliteStoreError(error);
    }
  }

  /** Deliveries not yet delivered nor given up: the outbox depth, for metrics. */
  async webhookBacklog(): Promise<number> {
    const row = this.#db.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'").get() as {
      n: bigint;
    };
    return Number(row.n);
  }

  onEvents(listener: () => void): void {
    this.#eventListeners.push(listener);
  }

  /** One batch to the writer thread; settles when its answer comes back (see #settle). */
  #commit(ops: WriteOp[]): Promise<CommittedBatch<ItemResult>> {
    return new Promise((resolve, reject) => {
      const batchId = this.#nextBatchId++;
      this.#inFlight = { batchId, resolve, reject };
      const request: BatchRequest = { kind: "batch", batchId, ops };
      const inline = this.#inline;
      if (inline !== undefined) {
        setImmediate(() => this.#settle(inline(request)));
        return;
      }
      this.#writerThread().postMessage(request);
    });
  }

  #writerThread(): Worker {
    if (this.#writer !== undefined) return this.#writer;
    // A small young generation: the writer allocates little per batch, and the default lets its
    // semi-spaces grow to tens of MB of resident memory over a long run.
    const writer = new Worker(WRITER_URL, { workerData: this.#init, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    writer.on("message", (result: BatchResult) => this.#settle(result));
    writer.on("error", (error) => this.#writerDied(error));
    writer.on("exit", (code) => {
      if (this.#writer === writer) this.#writerDied(new Error(`the SQLite writer thread exited with code ${code}`));
    });
    // Do not keep the process alive just for an idle writer.
    writer.unref();
    this.#writer = writer;
    return writer;
  }

  #writerDied(error: unknown): void {
    this.#writer = undefined;
    const batch = this.#inFlight;
    this.#inFlight = undefined;
    // Whether that batch committed is unknown: its callers get an error (a retry is safe: replays answer 200).
    batch?.reject(error);
  }

  #settle(result: BatchResult): void {
    const batch = this.#inFlight;
    if (batch === undefined || batch.batchId !== result.batchId) return;
    this.#inFlight = undefined;
    if (result.kind === "failed") {
      // Nothing in this batch is stored: every caller gets the failure, none a 200.
      batch.reject(result.failure === undefined ? new Error(result.error) : storeError(result.failure));
      return;
    }
    batch.resolve(result);
    if (result.eventsWritten > 0) for (const listener of this.#eventListeners) listener();
    if (result.changesWritten > 0) for (const listener of this.#changeListeners) listener();
  }

  /**
   * Reads on this thread's connection see what the writer committed (WAL), in position order;
   * the writer's lock makes positions follow commit order (batch-committer.ts), so nothing later
   * can appear below what a read returned.
   */
  async changesAfter(after: bigint, limit: number): Promise<Change[]> {
    return this.#read(() => this.#changeReads().after.all(after, limit) as StoredChange[]).map(changeFromRow);
  }

  async head(): Promise<bigint> {
    return this.#bounds().head;
  }

  async oldest(): Promise<bigint> {
    return this.#bounds().oldest;
  }

  /**
   * Wakes `listener` after each commit of this process that wrote changes. Another process on the
   * same file (PLANTSTORE_WORKERS) does not wake it: the feed's periodic poll finds those changes.
   */
  onChange(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    const result = await this.#writes.submit({ op: "pruneChanges", before, limit });
    return (result as { pruned: number }).pruned;
  }

  #bounds(): { head: bigint; oldest: bigint } {
    const row = this.#read(() => this.#changeReads().bounds.get()) as { lowest: bigint | null; highest: bigint | null };
    return logBounds(row.lowest, row.highest);
  }

  #changeReads(): Record<"after" | "bounds", StatementSync> {
    this.#changeStatements ??= {
      after: this.#db.prepare(
        `SELECT ${CHANGE_COLUMNS} FROM plant_changes WHERE position > ? ORDER BY position LIMIT ?`,
      ),
      bounds: this.#db.prepare("SELECT min(position) AS lowest, max(position) AS highest FROM plant_changes"),
    };
    return this.#changeStatements;
  }

  async get(id: bigint): Promise<NewPlant | undefined> {
    const row = this.#read(() => this.#select.get(id)) as PlantRow | undefined;
    return row === undefined ? undefined : plantFromRow(row);
  }

  async list(options: ListOptions): Promise<ListedPlant[]> {
    let rows: Array<PlantRowArray | PlantRow> | undefined;
    try {
      rows = page(this.#listStatements, options);
    } catch (error) {
      if (!isOutOfRange(error)) throw asSqliteStoreError(error);
    }
    if (rows === undefined || holdsInexactId(rows)) rows = this.#read(() => page(this.#listStatementsBigInt, options));
    return rows.map((row) => listedFromRow(Array.isArray(row) ? row : [row.id, row.name, row.tag]));
  }

  async ping(): Promise<void> {
    this.#read(() => this.#db.prepare("SELECT 1").get());
  }

  async migrations(): Promise<MigrationStatus> {
    const row = this.#db.prepare("SELECT count(*) AS n FROM schema_migrations").get() as { n: bigint };
    return migrationStatus(row.n);
  }

  /** Commits what is queued, stops the writer, then closes. */
  async close(): Promise<void> {
    if (this.#writes.closed) return;
    await this.#writes.close();
    const writer = this.#writer;
    this.#writer = undefined;
    if (writer !== undefined) {
      const exited = new Promise<void>((resolve) => writer.once("exit", () => resolve()));
      writer.postMessage({ kind: "close" } satisfies CloseRequest);
      await exited;
    }
    if (this.#db.isOpen) this.#db.close();
  }
}

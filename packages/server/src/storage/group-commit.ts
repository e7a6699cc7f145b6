import { storeError, type StoreFailure } from "./store-errors.ts";
import type { WriteHealth } from "./write-health.ts";

/**
 * Why one operation of a committed batch failed on its own (the rest of its batch is stored);
 * `failure` when it was the storage's fault (plain data: it may have crossed a thread).
 */
export type ItemFailure = { error: string; failure?: StoreFailure | undefined };

/** What a committed batch answers: per operation, in order, its result or why it alone failed. */
export type CommittedBatch<R> = {
  /** Shorter than the batch when the backend stopped early: the rest failed without being stored. */
  results: ReadonlyArray<R | ItemFailure>;
  commitMs: number;
};

export type GroupCommitOptions<Op, R> = {
  /**
   * Stores one batch in one transaction. Rejects when none of it is stored, or when whether it
   * was is unknown (a lost connection, a dead writer): every caller of the batch gets that error.
   */
  commit: (ops: Op[]) => Promise<CommittedBatch<R>>;
  /** Most operations one batch carries; the rest wait for the next one. */
  maxBatchSize: number;
  /** Batches committing at once (SQLite has one writer; PostgreSQL can use several connections). */
  maxBatchesInFlight: number;
  /**
   * While a batch commits, another one starts only once at least this many writes wait (default 1).
   * Below that they wait for the commit in flight and go together: fewer, larger batches cost the
   * database far less per write (see PostgresStore), and parallel batches still start when the
   * queue outgrows what one commit at a time carries.
   */
  minOverlappingBatch?: number;
  /** Called after every committed batch, for metrics. */
  onCommit?: ((batchSize: number, commitMs: number) => void) | undefined;
  /** Told when each batch starts and how it ended, for readiness. */
  health?: WriteHealth | undefined;
  /**
   * Whether a committed `op` shows that plants can be stored (default: every op does). A batch of
   * none of these (the probe, webhook bookkeeping) is only a probe to readiness: a small write can
   * still fit where plants no longer do.
   */
  storesPlants?: ((op: Op) => boolean) | undefined;
};

type Pending<Op, R> = {
  op: Op;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
};

function isFailure(result: unknown): result is ItemFailure {
  return typeof result === "object" && result !== null && "error" in result;
}

/**
 * Group commit, the same for every backend: writes queue here while earlier batches commit, then
 * go together as one transaction (one fsync, one WAL flush). A caller's promise settles only after
 * its batch has committed, so a resolved write is durable and a 200 can be sent. The batch grows
 * with the load by itself: the longer a commit takes, the more the next one carries.
 */
export class GroupCommit<Op, R> {
  readonly #commit: (ops: Op[]) => Promise<CommittedBatch<R>>;
  readonly #maxBatchSize: number;
  readonly #maxInFlight: number;
  readonly #minOverlapping: number;
  readonly #onCommit: ((batchSize: number, commitMs: number) => void) | undefined;
  readonly #health: WriteHealth | undefined;
  readonly #storesPlants: (op: Op) => boolean;
  #queue: Array<Pending<Op, R>> = [];
  #inFlight = 0;
  #scheduled = false;
  #closed = false;
  #drained: Array<() => void> = [];

  constructor(options: GroupCommitOptions<Op, R>) {
    this.#commit = options.commit;
    this.#maxBatchSize = options.maxBatchSize;
    this.#maxInFlight = options.maxBatchesInFlight;
    this.#minOverlapping = options.minOverlappingBatch ?? 1;
    this.#onCommit = options.onCommit;
    this.#health = options.health;
    this.#storesPlants = options.storesPlants ?? (() => true);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queues one write; settles once the batch that carries it has committed (or failed). */
  submit(op: Op): Promise<R> {
    if (this.#closed) return Promise.reject(new Error("the store is closed"));
    return new Promise((resolve, reject) => {
      this.#queue.push({ op, resolve, reject });
      this.#schedule();
    });
  }

  /** Refuses new writes and resolves once everything queued has committed or failed. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#inFlight > 0 || this.#queue.length > 0) {
      await new Promise<void>((resolve) => this.#drained.push(resolve));
    }
  }

  /**
   * Rejects every write still queued (none of them sent, so none stored) with `error`: for when
   * the backend knows its next commit cannot succeed, so they need not wait for a slot first.
   */
  failQueued(error: Error): void {
    for (const item of this.#queue.splice(0)) item.reject(error);
    if (this.#inFlight === 0) for (const done of this.#drained.splice(0)) done();
  }

  /** Whether another batch may start now: none in flight, or a queue worth a parallel commit. */
  #mayStart(): boolean {
    if (this.#inFlight >= this.#maxInFlight || this.#queue.length === 0) return false;
    return this.#inFlight === 0 || this.#queue.length >= this.#minOverlapping;
  }

  #schedule(): void {
    if (this.#scheduled || !this.#mayStart()) return;
    this.#scheduled = true;
    // After the current I/O phase, so requests parsed together travel together.
    setImmediate(() => {
      this.#scheduled = false;
      this.#send();
    });
  }

  #send(): void {
    while (this.#mayStart()) {
      this.#inFlight++;
      void this.#run(this.#queue.splice(0, this.#maxBatchSize));
    }
  }

  async #run(items: Array<Pending<Op, R>>): Promise<void> {
    const settled = this.#health?.begin(items.some(({ op }) => this.#storesPlants(op)) ? "write" : "probe");
    try {
      const { results, commitMs } = await this.#commit(items.map(({ op }) => op));
      settled?.();
      this.#onCommit?.(items.length, commitMs);
      for (let i = 0; i < items.length; i++) {
        const result = results[i];
        // Conflicts and replays are results: each caller gets its own answer.
        if (result === undefined) items[i]!.reject(new Error("the batch stopped before this write"));
        else if (isFailure(result))
          items[i]!.reject(result.failure === undefined ? new Error(result.error) : storeError(result.failure));
        else items[i]!.resolve(result);
      }
    } catch (error) {
      settled?.(error);
      // Nothing of this batch is stored, or whether it is is unknown: no caller gets a 200. A
      // retry is safe: a plant that was stored answers as a replay.
      for (const item of items) item.reject(error);
    } finally {
      this.#inFlight--;
      // Whatever queued during that commit goes next, at once.
      this.#send();
      if (this.#inFlight === 0 && this.#queue.length === 0) for (const done of this.#drained.splice(0)) done();
    }
  }
}

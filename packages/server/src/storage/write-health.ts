import { type Clock, systemClock } from "../clock.ts";
import { StoreError, type StoreFailureKind } from "./store-errors.ts";

/**
 * A write that has waited this long for the database is stalled: a commit takes milliseconds, so
 * a second means a lock, a long statement or a database that does not answer. Readiness says so
 * from then on, well before the write itself times out.
 */
const WRITE_STALL_MS = 1_000;

/** Why writes are not healthy: the last one failed with a storage error, or one is stalled. */
export type WriteProblem = { kind: StoreFailureKind; stalledMs?: number };

export type WriteHealthOptions = {
  stallMs?: number;
  /** Times stalls and the probe's bound (default: the wall clock, monotonic); a test moves its own. */
  clock?: Clock;
};

/** Durations only, so a monotonic `now`: a wall-clock step must not make a write look stalled. */
const monotonicClock: Clock = {
  now: () => performance.now(),
  setTimer: (callback, ms) => systemClock.setTimer(callback, ms),
};

/**
 * Whether this instance's writes succeed, for `/readyz`: both stores report every write (group
 * commit does it for them) and readiness asks `check()`. The last outcome decides: a storage
 * failure makes writes unhealthy until a write or a probe succeeds; a write in flight for longer
 * than `stallMs` makes them unhealthy while it waits. Failures that are not the storage's (a bug)
 * leave the state as it was.
 */
export class WriteHealth {
  readonly #stallMs: number;
  readonly #clock: Clock;
  readonly #inFlight = new Map<number, number>();
  #nextId = 1;
  #failure: StoreFailureKind | undefined;
  #probing: Promise<void> | undefined;

  constructor(options: WriteHealthOptions = {}) {
    this.#stallMs = options.stallMs ?? WRITE_STALL_MS;
    this.#clock = options.clock ?? monotonicClock;
  }

  /** A write went to the database; call what this returns once it has an outcome (an error, or none). */
  begin(): (error?: unknown) => void {
    const id = this.#nextId++;
    this.#inFlight.set(id, this.#clock.now());
    return (error) => {
      if (!this.#inFlight.delete(id)) return;
      if (error === undefined) this.#failure = undefined;
      else if (error instanceof StoreError) this.#failure = error.kind;
    };
  }

  /**
   * Writes are known to fail without one being tried (PostgreSQL's circuit opened): unhealthy at
   * once, until a write or a probe succeeds.
   */
  fail(error: StoreError): void {
    this.#failure = error.kind;
  }

  /** What is wrong with writes right now, without probing. */
  problem(): WriteProblem | undefined {
    if (this.#failure !== undefined) return { kind: this.#failure };
    let oldest = Infinity;
    for (const started of this.#inFlight.values()) oldest = Math.min(oldest, started);
    const waited = this.#clock.now() - oldest;
    return waited > this.#stallMs ? { kind: "busy", stalledMs: Math.round(waited) } : undefined;
  }

  /**
   * What is wrong with writes, after a probe when the last write failed and none is under way
   * (an instance taken out of rotation gets no writes that could show it recovered). The probe
   * is a real write (a rollback succeeds on a full disk; an insert does not), shared by
   * concurrent callers, and waited for at most `stallMs`: past that it is a stalled write.
   */
  async check(probe?: () => Promise<void>): Promise<WriteProblem | undefined> {
    if (probe !== undefined && this.#failure !== undefined && this.#inFlight.size === 0) {
      this.#probing ??= this.#probe(probe).finally(() => (this.#probing = undefined));
      let cancel = () => {};
      await Promise.race([
        this.#probing,
        new Promise<void>((resolve) => (cancel = this.#clock.setTimer(resolve, this.#stallMs))),
      ]);
      cancel();
    }
    return this.problem();
  }

  async #probe(probe: () => Promise<void>): Promise<void> {
    const done = this.begin();
    try {
      await probe();
      done();
    } catch (error) {
      done(error);
    }
  }
}

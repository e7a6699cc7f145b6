import { type Clock, systemClock } from "../clock.ts";
import { StoreError, type StoreFailureKind } from "./store-errors.ts";

/**
 * A write that has waited this long for the database is stalled: a commit takes milliseconds, so
 * a second means a lock, a long statement or a database that does not answer. Readiness says so
 * from then on, well before the write itself times out.
 */
const WRITE_STALL_MS = 1_000;

/**
 * A probe is a small write, and a disk can still hold a small write and not a group of creates
 * (SQLite reuses the WAL space a failed group had taken). So once real writes failed after a
 * probe had succeeded, probes are not believed for this long, twice as long at each such failure
 * (up to PROBE_DISTRUST_MAX_MS), until a real write succeeds: readiness then stays 503 instead of
 * flapping to 200 at every probe while creates fail.
 */
const PROBE_DISTRUST_MS = 10_000;
const PROBE_DISTRUST_MAX_MS = 300_000;

/**
 * Why writes are not healthy: the last one failed with a storage error, or one is stalled.
 * `probeHeldMs`: writes failed again after a probe had succeeded; no probe is believed for this long.
 */
export type WriteProblem = { kind: StoreFailureKind; stalledMs?: number; probeHeldMs?: number };

export type WriteHealthOptions = {
  stallMs?: number;
  /** Times stalls, the probe's bound and the distrust of probes (default: the wall clock, monotonic); a test moves its own. */
  clock?: Clock | undefined;
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
 * leave the state as it was. A probe's success is believed until real writes contradict it
 * (see PROBE_DISTRUST_MS).
 */
export class WriteHealth {
  readonly #stallMs: number;
  readonly #clock: Clock;
  readonly #inFlight = new Map<number, number>();
  #nextId = 1;
  #failure: StoreFailureKind | undefined;
  #probing: Promise<void> | undefined;
  /** The last failure was cleared by a probe, and no real write has succeeded since. */
  #clearedByProbe = false;
  /** How long probes were last distrusted for (0: never since the last real success), and until when. */
  #distrustMs = 0;
  #distrustedUntil = -Infinity;

  constructor(options: WriteHealthOptions = {}) {
    this.#stallMs = options.stallMs ?? WRITE_STALL_MS;
    this.#clock = options.clock ?? monotonicClock;
  }

  /**
   * A write went to the database; call what this returns once it has an outcome (an error, or
   * none). A `"probe"` is a write whose success does not show that plants can be stored.
   */
  begin(kind: "write" | "probe" = "write"): (error?: unknown) => void {
    const probe = kind === "probe";
    const id = this.#nextId++;
    this.#inFlight.set(id, this.#clock.now());
    return (error) => {
      if (!this.#inFlight.delete(id)) return;
      if (error === undefined) this.#succeeded(probe);
      else if (error instanceof StoreError) this.#failed(error.kind, probe);
    };
  }

  #succeeded(probe: boolean): void {
    if (probe) {
      if (this.#failure === undefined || this.#clock.now() < this.#distrustedUntil) return;
      this.#clearedByProbe = true;
    } else {
      this.#clearedByProbe = false;
      this.#distrustMs = 0;
      this.#distrustedUntil = -Infinity;
    }
    this.#failure = undefined;
  }

  #failed(kind: StoreFailureKind, probe: boolean): void {
    if (!probe && this.#clearedByProbe) {
      this.#distrustMs = Math.min(
        this.#distrustMs === 0 ? PROBE_DISTRUST_MS : this.#distrustMs * 2,
        PROBE_DISTRUST_MAX_MS,
      );
      this.#distrustedUntil = this.#clock.now() + this.#distrustMs;
    }
    this.#clearedByProbe = false;
    this.#failure = kind;
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
    if (this.#failure !== undefined) {
      const heldMs = this.#distrustedUntil - this.#clock.now();
      return heldMs > 0 ? { kind: this.#failure, probeHeldMs: Math.ceil(heldMs) } : { kind: this.#failure };
    }
    let oldest = Infinity;
    for (const started of this.#inFlight.values()) oldest = Math.min(oldest, started);
    const waited = this.#clock.now() - oldest;
    return waited > this.#stallMs ? { kind: "busy", stalledMs: Math.round(waited) } : undefined;
  }

  /**
   * What is wrong with writes, after a probe when the last write failed and none is under way
   * (an instance taken out of rotation gets no writes that could show it recovered). The probe
   * is a real write (a rollback succeeds on a full disk; an insert does not), shared by
   * concurrent callers, and waited for at most `stallMs`: past that it is a stalled write. No probe
   * while probes are distrusted: it could only use up the room the failing writes lack.
   */
  async check(probe?: () => Promise<void>): Promise<WriteProblem | undefined> {
    const distrusted = this.#clock.now() < this.#distrustedUntil;
    if (probe !== undefined && this.#failure !== undefined && this.#inFlight.size === 0 && !distrusted) {
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
    const done = this.begin("probe");
    try {
      await probe();
      done();
    } catch (error) {
      done(error);
    }
  }
}

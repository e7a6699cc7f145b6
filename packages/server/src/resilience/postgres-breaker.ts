import { isClientQueryTimeout, type PostgresSettings, probeDatabase } from "../storage/postgres/pool.ts";
import { StoreError, StoreUnavailableError } from "../storage/store-errors.ts";
import { CircuitBreaker, CircuitOpenError, type CircuitState, type Schedule } from "./circuit-breaker.ts";

export type PostgresBreakerSettings = {
  /** Timeouts or refusals in a row that open the circuit (`PLANTSTORE_PG_BREAKER_FAILURES`). */
  failureThreshold: number;
  /** How often a probe starts while the circuit is open. */
  probeIntervalMs?: number;
  /** How long one probe (connect and `SELECT 1`) may take. */
  probeTimeoutMs?: number;
  /** A statement running this long makes the breaker probe; no answer to the probe opens the circuit. */
  stallMs?: number;
  onStateChange?: (state: CircuitState, reason: CircuitChangeReason) => void;
  /** Tests only: what asks the database whether it answers (default: connect and `SELECT 1`). */
  probe?: () => Promise<void>;
  /** Tests only: the core's timers. */
  schedule?: Schedule;
};

/** Why the circuit changed: failures in a row, or (opening) a statement stalled past `stallMs` and a probe failed. */
export type CircuitChangeReason = { stalled: boolean };

export const DEFAULT_POSTGRES_BREAKER = {
  failureThreshold: 3,
  probeIntervalMs: 500,
  probeTimeoutMs: 1_000,
  stallMs: 2_000,
} as const;

/**
 * The circuit breaker in front of one PostgreSQL database: the server's one CircuitBreaker
 * (./circuit-breaker.ts), with what PostgreSQL needs on top. A database that went silent (frozen,
 * unplugged) otherwise costs every request the full connect or query timeout for as long as it
 * lasts; with the circuit open they get StoreUnavailableError (503 UNAVAILABLE, `Retry-After: 1`)
 * at once, and a probe every `probeIntervalMs` closes it as soon as the database answers again.
 *
 * Only "not reachable" failures (StoreUnavailableError: timeouts, refusals, resets) count. A busy
 * database (lock waits, statement timeouts) answers, so it never opens the circuit; nor does a
 * statement whose answer the client stopped waiting for while the database still answers a probe:
 * that one is reported busy (a lock, or a statement too slow), not unreachable.
 *
 * A silent database fails nothing until the timeouts expire, so a statement running `stallMs`
 * makes the breaker probe at once, and a probe that gets no answer either trips the circuit
 * without waiting for them (a frozen database: about `stallMs` + `probeTimeoutMs`).
 */
export class PostgresBreaker {
  readonly #core: CircuitBreaker;
  readonly #probe: () => Promise<void>;
  readonly #probeIntervalMs: number;
  readonly #stallMs: number;
  // When each running statement started, for the stall check; `abandon` answers its caller early.
  readonly #running = new Set<Running>();
  readonly #stallTimer: NodeJS.Timeout;
  #stallProbe: Promise<void> | undefined;
  #liveness: Promise<boolean> | undefined;
  #disposed = false;

  constructor(database: PostgresSettings, settings: PostgresBreakerSettings) {
    const probeTimeoutMs = settings.probeTimeoutMs ?? DEFAULT_POSTGRES_BREAKER.probeTimeoutMs;
    this.#probeIntervalMs = settings.probeIntervalMs ?? DEFAULT_POSTGRES_BREAKER.probeIntervalMs;
    this.#stallMs = settings.stallMs ?? DEFAULT_POSTGRES_BREAKER.stallMs;
    this.#probe = settings.probe ?? (() => probeDatabase(database, probeTimeoutMs));
    this.#core = new CircuitBreaker({
      dependency: "PostgreSQL",
      failureThreshold: settings.failureThreshold,
      isFailure: (error) => error instanceof StoreUnavailableError,
      probe: this.#probe,
      probeIntervalMs: this.#probeIntervalMs,
      probeTimeoutMs,
      ...(settings.schedule === undefined ? {} : { schedule: settings.schedule }),
    });
    const { onStateChange } = settings;
    this.#core.onStateChange((state, cause) => {
      // Statements hung on the silent database would hold their callers for the full timeouts:
      // they are answered now instead. Only ever with an error, so nothing unstored is acknowledged.
      if (state === "open") for (const running of this.#running) running.abandon(this.openError(cause));
      onStateChange?.(state, { stalled: cause instanceof StalledError });
    });
    this.#stallTimer = setInterval(() => this.#checkStall(), Math.max(10, this.#stallMs / 4));
    this.#stallTimer.unref();
  }

  get state(): CircuitState {
    return this.#core.state;
  }

  /** What anything that needs the database gets while the circuit is open. */
  openError(cause?: unknown): StoreUnavailableError {
    return new StoreUnavailableError(
      `the database is not reachable: the circuit is open (it stopped answering); probing every ${this.#probeIntervalMs} ms`,
      { cause },
    );
  }

  /**
   * Runs `fn` (which throws store errors) unless the circuit is open. A call still running when the
   * circuit opens is answered at once with the open circuit's error; its statement goes on until
   * its own timeout, and whatever it did is only ever reported as a failure (a 503 never claims a
   * write did not happen: a retried creation is answered as a replay).
   */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    let abandon: (error: unknown) => void = () => undefined;
    const abandoned = new Promise<never>((_, reject) => (abandon = reject));
    const running: Running = { started: Date.now(), abandon };
    try {
      return await this.#core.call(async () => {
        this.#running.add(running);
        try {
          return await Promise.race([fn(), abandoned]);
        } catch (error) {
          throw await this.#reclassified(error);
        } finally {
          this.#running.delete(running);
        }
      });
    } catch (error) {
      // The core's rejection becomes a store error: 503 UNAVAILABLE with Retry-After, like any outage.
      if (error instanceof CircuitOpenError) throw this.openError(error);
      throw error;
    }
  }

  dispose(): void {
    this.#disposed = true;
    this.#core.stop();
    clearInterval(this.#stallTimer);
  }

  #checkStall(): void {
    if (this.#core.state === "open" || this.#stallProbe !== undefined || this.#disposed) return;
    const now = Date.now();
    let stalled = false;
    for (const { started } of this.#running) if (now - started >= this.#stallMs) stalled = true;
    if (!stalled) return;
    // A probe that answers leaves it closed: the database is slow or busy, not gone.
    this.#stallProbe = this.#probe().then(
      () => {
        this.#stallProbe = undefined;
      },
      () => {
        this.#stallProbe = undefined;
        this.#core.trip(new StalledError(this.#stallMs));
      },
    );
  }

  async #reclassified(error: unknown): Promise<unknown> {
    if (!isClientQueryTimeout(error)) return error;
    if (!(await this.#answers())) return error;
    return new StoreError(
      "busy",
      "the database is busy, statement timeout: no answer in time, though the database answers a probe",
      { cause: error },
    );
  }

  /** One probe shared by every statement that timed out at about the same moment. */
  #answers(): Promise<boolean> {
    this.#liveness ??= this.#probe()
      .then(
        () => true,
        () => false,
      )
      .finally(() => {
        this.#liveness = undefined;
      });
    return this.#liveness;
  }
}

type Running = { started: number; abandon: (error: unknown) => void };

/** Why the stall check tripped the circuit. */
class StalledError extends Error {
  override readonly name = "StalledError";

  constructor(stallMs: number) {
    super(`a statement ran ${stallMs} ms and a probe got no answer`);
  }
}

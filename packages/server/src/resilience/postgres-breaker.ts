import { isClientQueryTimeout, probeDatabase, type PostgresSettings } from "../storage/postgres/pool.ts";
import { StoreBusyError, StoreUnavailableError } from "../storage/store-errors.ts";
import {
  ConsecutiveFailureBreaker,
  type CircuitChangeReason,
  type CircuitState,
} from "./consecutive-failure-breaker.ts";

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
};

export const DEFAULT_POSTGRES_BREAKER = {
  failureThreshold: 3,
  probeIntervalMs: 500,
  probeTimeoutMs: 1_000,
  stallMs: 2_000,
} as const;

/**
 * The circuit breaker in front of one PostgreSQL database. A database that went silent (frozen,
 * unplugged) otherwise costs every request the full connect or query timeout for as long as it
 * lasts; with the circuit open they get 503 UNAVAILABLE at once, and a probe every
 * `probeIntervalMs` closes it as soon as the database answers again.
 *
 * Only "not reachable" failures (StoreUnavailableError: timeouts, refusals, resets) count. A busy
 * database (lock waits, statement timeouts) answers, so it never opens the circuit; nor does a
 * statement whose answer the client stopped waiting for while the database still answers a probe:
 * that one is reported busy (a lock, or a statement too slow), not unreachable.
 */
export class PostgresBreaker {
  readonly #core: ConsecutiveFailureBreaker;
  readonly #probe: () => Promise<void>;
  readonly #probeIntervalMs: number;
  #liveness: Promise<boolean> | undefined;

  constructor(database: PostgresSettings, settings: PostgresBreakerSettings) {
    const probeTimeoutMs = settings.probeTimeoutMs ?? DEFAULT_POSTGRES_BREAKER.probeTimeoutMs;
    const probeIntervalMs = settings.probeIntervalMs ?? DEFAULT_POSTGRES_BREAKER.probeIntervalMs;
    this.#probe = () => probeDatabase(database, probeTimeoutMs);
    this.#core = new ConsecutiveFailureBreaker({
      failureThreshold: settings.failureThreshold,
      isFailure: (error) => error instanceof StoreUnavailableError,
      openError: () => this.openError(),
      probe: this.#probe,
      probeIntervalMs,
      stallMs: settings.stallMs ?? DEFAULT_POSTGRES_BREAKER.stallMs,
      onStateChange: settings.onStateChange,
    });
    this.#probeIntervalMs = probeIntervalMs;
  }

  get state(): CircuitState {
    return this.#core.state;
  }

  /** What anything that needs the database gets while the circuit is open. */
  openError(): StoreUnavailableError {
    return new StoreUnavailableError(
      `the database is not reachable: the circuit is open (it stopped answering); probing every ${this.#probeIntervalMs} ms`,
    );
  }

  /** Runs `fn` (which throws store errors) unless the circuit is open. */
  call<T>(fn: () => Promise<T>): Promise<T> {
    return this.#core.call(async () => {
      try {
        return await fn();
      } catch (error) {
        throw await this.#reclassified(error);
      }
    });
  }

  dispose(): void {
    this.#core.dispose();
  }

  async #reclassified(error: unknown): Promise<unknown> {
    if (!isClientQueryTimeout(error)) return error;
    if (!(await this.#answers())) return error;
    return new StoreBusyError(
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

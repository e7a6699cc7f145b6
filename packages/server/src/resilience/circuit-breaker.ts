/**
 * Whether calls go to the dependency (`closed`) or are refused at once without trying (`open`).
 * There is no half-open state for callers: only the background probe decides that the dependency
 * is back.
 */
export type CircuitState = "closed" | "open";

/** What `call` throws at once while the circuit is open, instead of waiting on a sick dependency. */
export class CircuitOpenError extends Error {
  override readonly name = "CircuitOpenError";

  constructor(dependency: string) {
    super(`${dependency} is not answering; the circuit is open`);
  }
}

/** Runs `run` after `ms`; returns how to cancel it. Tests pass one they advance themselves. */
export type Schedule = (run: () => void, ms: number) => () => void;

const realSchedule: Schedule = (run, ms) => {
  // A probe must never keep a process alive that is otherwise done.
  const timer = setTimeout(run, ms).unref();
  return () => clearTimeout(timer);
};

export type CircuitBreakerOptions = {
  /** Names the dependency in CircuitOpenError's message (`Redis`, `PostgreSQL`). */
  dependency: string;
  /** Consecutive failed calls that open the circuit. */
  failureThreshold: number;
  /** Asks the dependency whether it answers again (a PING, a `SELECT 1`); resolving closes the circuit. */
  probe: () => Promise<unknown>;
  /** Pause before each probe while the circuit is open. */
  probeIntervalMs: number;
  /** A probe still unsettled after this long counts as failed, so a hung probe cannot stall recovery. */
  probeTimeoutMs: number;
  /**
   * Whether a thrown value is the dependency failing (a timeout, a refused connection), rather
   * than its answer (a rate-limit refusal, a unique violation). Answers pass through and count as
   * success. Default: everything thrown is a failure.
   */
  isFailure?: (error: unknown) => boolean;
  schedule?: Schedule;
};

/**
 * A circuit breaker for a dependency that can hang rather than refuse: after `failureThreshold`
 * consecutive failures, `call` throws CircuitOpenError at once, so callers fall back (or fail
 * fast) without waiting a timeout each; a background probe every `probeIntervalMs` closes it
 * again as soon as the dependency answers.
 *
 * Hand-written (about 100 lines) rather than taken from opossum or cockatiel, because both close
 * the circuit through a half-open trial that is a caller's own call: while the dependency is still
 * frozen, one request per reset interval pays the full timeout (and cockatiel makes every caller
 * arriving meanwhile wait on that trial). Here callers never wait on a dependency known to be
 * sick; recovery is the probe's business alone. opossum also trips on an error percentage over a
 * rolling window kept by timers, where a hang is plainly a run of consecutive failures, and its
 * types live apart in DefinitelyTyped.
 */
export class CircuitBreaker {
  readonly #options: Required<Omit<CircuitBreakerOptions, "isFailure">> & Pick<CircuitBreakerOptions, "isFailure">;
  readonly #listeners = new Set<(state: CircuitState, cause: unknown) => void>();
  #state: CircuitState = "closed";
  #failures = 0;
  #cancelProbe: (() => void) | undefined;
  #stopped = false;

  constructor(options: CircuitBreakerOptions) {
    this.#options = { schedule: realSchedule, ...options };
  }

  get state(): CircuitState {
    return this.#state;
  }

  /**
   * Listens to every change of state, with what caused it (the last failure when opening,
   * undefined when the probe closed it). Returns how to stop listening.
   */
  onStateChange(listener: (state: CircuitState, cause: unknown) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Runs `fn` while closed, counting its failures; throws CircuitOpenError at once while open. */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#state === "open") throw new CircuitOpenError(this.#options.dependency);
    try {
      const result = await fn();
      this.#failures = 0;
      return result;
    } catch (error) {
      if (this.#options.isFailure?.(error) ?? true) this.#failed(error);
      else this.#failures = 0;
      throw error;
    }
  }

  /** Stops probing (at shutdown); the state stays as it is. */
  stop(): void {
    this.#stopped = true;
    this.#cancelProbe?.();
    this.#cancelProbe = undefined;
  }

  #failed(error: unknown): void {
    // Calls that were already waiting when the circuit opened fail late: they change nothing.
    if (this.#state === "open") return;
    this.#failures++;
    if (this.#failures < this.#options.failureThreshold) return;
    this.#change("open", error);
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    if (this.#stopped) return;
    this.#cancelProbe = this.#options.schedule(() => void this.#probe(), this.#options.probeIntervalMs);
  }

  async #probe(): Promise<void> {
    this.#cancelProbe = undefined;
    let cancelTimeout: (() => void) | undefined;
    try {
      await Promise.race([
        this.#options.probe(),
        new Promise((_, reject) => {
          cancelTimeout = this.#options.schedule(
            () => reject(new Error("probe timed out")),
            this.#options.probeTimeoutMs,
          );
        }),
      ]);
    } catch {
      this.#scheduleProbe();
      return;
    } finally {
      cancelTimeout?.();
    }
    if (this.#stopped) return;
    this.#failures = 0;
    this.#change("closed", undefined);
  }

  #change(state: CircuitState, cause: unknown): void {
    this.#state = state;
    for (const listener of this.#listeners) listener(state, cause);
  }
}

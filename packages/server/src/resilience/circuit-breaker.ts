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
  /**
   * While the circuit is open, a probe starts this often, whether or not the last one has settled:
   * a probe stuck on a connection opened during the outage must not delay noticing the recovery
   * by its whole timeout.
   */
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
 * consecutive failures (or a `trip()` by whoever sees it hang sooner), `call` throws
 * CircuitOpenError at once, so callers fall back (or fail fast) without waiting a timeout each; a
 * background probe every `probeIntervalMs` closes it again as soon as the dependency answers.
 * Calls already running when it opens settle with their own outcome; their success does not close
 * it (an answer to a question asked before the outage says little about now).
 *
 * The one breaker of the server: Redis (rate limits, ../rate-limit/redis.ts) and PostgreSQL
 * (./postgres-breaker.ts, which adds the stalled-statement trip on top) both use it.
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
  // The timeouts of probes still unsettled (several may be, see probeIntervalMs).
  readonly #probeTimeouts = new Set<() => void>();
  #stopped = false;

  constructor(options: CircuitBreakerOptions) {
    if (!(options.failureThreshold >= 1)) throw new RangeError("failureThreshold must be at least 1");
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
      // Calls that were already waiting when the circuit opened succeed late: only a probe closes it.
      if (this.#state === "closed") this.#failures = 0;
      return result;
    } catch (error) {
      if (this.#options.isFailure?.(error) ?? true) this.#failed(error);
      else if (this.#state === "closed") this.#failures = 0;
      throw error;
    }
  }

  /**
   * Opens the circuit now, with `cause` as the reason, for a caller that knows the dependency is
   * gone before the failures add up (PostgreSQL: a statement stalled and a probe got no answer).
   * Nothing happens while it is open already or after `stop()`.
   */
  trip(cause: unknown): void {
    if (this.#state === "open" || this.#stopped) return;
    this.#open(cause);
  }

  /** Stops probing (at shutdown); the state stays as it is. */
  stop(): void {
    this.#stopped = true;
    this.#stopProbing();
  }

  #failed(error: unknown): void {
    // Calls that were already waiting when the circuit opened fail late: they change nothing.
    if (this.#state === "open") return;
    this.#failures++;
    if (this.#failures < this.#options.failureThreshold) return;
    this.#open(error);
  }

  #open(cause: unknown): void {
    this.#change("open", cause);
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    if (this.#stopped) return;
    this.#cancelProbe = this.#options.schedule(() => {
      // The next one is due an interval after this one starts, however long this one takes.
      this.#scheduleProbe();
      void this.#probe();
    }, this.#options.probeIntervalMs);
  }

  #stopProbing(): void {
    this.#cancelProbe?.();
    this.#cancelProbe = undefined;
    for (const cancel of this.#probeTimeouts) cancel();
    this.#probeTimeouts.clear();
  }

  async #probe(): Promise<void> {
    let cancelTimeout: (() => void) | undefined;
    try {
      await Promise.race([
        this.#options.probe(),
        new Promise((_, reject) => {
          cancelTimeout = this.#options.schedule(
            () => reject(new Error("probe timed out")),
            this.#options.probeTimeoutMs,
          );
          this.#probeTimeouts.add(cancelTimeout);
        }),
      ]);
    } catch {
      return;
    } finally {
      if (cancelTimeout !== undefined) {
        cancelTimeout();
        this.#probeTimeouts.delete(cancelTimeout);
      }
    }
    if (this.#stopped || this.#state === "closed") return;
    this.#stopProbing();
    this.#failures = 0;
    this.#change("closed", undefined);
  }

  #change(state: CircuitState, cause: unknown): void {
    this.#state = state;
    for (const listener of this.#listeners) listener(state, cause);
  }
}

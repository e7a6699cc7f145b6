export type CircuitState = "closed" | "open";

export type ConsecutiveFailureBreakerOptions = {
  /** Failures in a row (no success between them) that open the circuit. */
  failureThreshold: number;
  /** Whether a rejection says the dependency is gone (a timeout, a refusal) rather than answering. */
  isFailure: (error: unknown) => boolean;
  /** What a call gets while the circuit is open, without running. */
  openError: () => Error;
  /**
   * Asks the dependency whether it answers again; the first probe that resolves closes the
   * circuit. It must bound its own wait (a short timeout).
   */
  probe: () => Promise<void>;
  /**
   * A probe starts this often while the circuit is open, whether or not the last one finished:
   * a probe stuck on a connection opened during the outage must not delay noticing the recovery
   * by its whole timeout.
   */
  probeIntervalMs: number;
  onStateChange?: (state: CircuitState, reason: { failures: number }) => void;
};

/**
 * A circuit breaker in its simplest useful form. Closed, calls run and their failures are counted;
 * after `failureThreshold` in a row it opens, and calls fail at once with `openError()` instead of
 * each waiting out the dependency's timeouts. Open, only the background probe touches the
 * dependency, and the first probe that succeeds closes the circuit. There is no half-open trial
 * of real calls: the probe is the trial, so no caller's request is spent finding out.
 *
 * Calls already running when the circuit opens are left alone and settle with their own outcome.
 */
export class ConsecutiveFailureBreaker {
  readonly #options: ConsecutiveFailureBreakerOptions;
  #state: CircuitState = "closed";
  #failures = 0;
  #probeTimer: ReturnType<typeof setInterval> | undefined;
  #disposed = false;

  constructor(options: ConsecutiveFailureBreakerOptions) {
    if (!(options.failureThreshold >= 1)) throw new RangeError("failureThreshold must be at least 1");
    this.#options = options;
  }

  get state(): CircuitState {
    return this.#state;
  }

  /** Runs `fn` unless the circuit is open; counts its failure or resets the count on success. */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#state === "open") throw this.#options.openError();
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      if (this.#options.isFailure(error)) this.#failed();
      throw error;
    }
    // An answer that started before the circuit opened says little about now: only a probe closes it.
    if (this.#state === "closed") this.#failures = 0;
    return result;
  }

  /** Stops probing; calls after this run (or fail fast) as the state says, and nothing probes again. */
  dispose(): void {
    this.#disposed = true;
    this.#stopProbing();
  }

  #failed(): void {
    if (this.#state === "open") return;
    this.#failures++;
    if (this.#failures < this.#options.failureThreshold) return;
    this.#state = "open";
    this.#options.onStateChange?.("open", { failures: this.#failures });
    this.#startProbing();
  }

  #startProbing(): void {
    if (this.#disposed) return;
    this.#probeTimer = setInterval(() => {
      this.#options.probe().then(
        () => this.#close(),
        () => undefined,
      );
    }, this.#options.probeIntervalMs);
    // Probing never keeps a process alive that has nothing else to do.
    this.#probeTimer.unref();
  }

  #stopProbing(): void {
    if (this.#probeTimer !== undefined) clearInterval(this.#probeTimer);
    this.#probeTimer = undefined;
  }

  #close(): void {
    if (this.#state === "closed" || this.#disposed) return;
    this.#stopProbing();
    const failures = this.#failures;
    this.#state = "closed";
    this.#failures = 0;
    this.#options.onStateChange?.("closed", { failures });
  }
}

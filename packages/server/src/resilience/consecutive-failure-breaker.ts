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
  /**
   * A call still running after this long makes the breaker probe at once; a probe that fails
   * too opens the circuit without waiting for the stalled calls' own timeouts (a dependency
   * that went silent holds every call until then). A probe that answers leaves it closed: the
   * dependency is slow or busy, not gone. Unset: only failures count.
   */
  stallMs?: number;
  onStateChange?: (state: CircuitState, reason: CircuitChangeReason) => void;
};

/** Why the circuit changed: failures in a row, or (opening) a call stalled past `stallMs` and a probe failed. */
export type CircuitChangeReason = { failures: number; stalled: boolean };

/**
 * A circuit breaker in its simplest useful form. Closed, calls run and their failures are counted;
 * after `failureThreshold` in a row it opens, and calls fail at once with `openError()` instead of
 * each waiting out the dependency's timeouts. With `stallMs`, a call running that long and a
 * probe that fails open it sooner: a silent dependency fails nothing until its timeouts expire. Open, only the background probe touches the
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
  // When each running call started, for the stall check.
  readonly #running = new Set<{ started: number }>();
  readonly #stallTimer: ReturnType<typeof setInterval> | undefined;
  #stallProbe: Promise<void> | undefined;

  constructor(options: ConsecutiveFailureBreakerOptions) {
    if (!(options.failureThreshold >= 1)) throw new RangeError("failureThreshold must be at least 1");
    this.#options = options;
    const { stallMs } = options;
    if (stallMs !== undefined) {
      this.#stallTimer = setInterval(() => this.#checkStall(stallMs), Math.max(10, stallMs / 4));
      this.#stallTimer.unref();
    }
  }

  get state(): CircuitState {
    return this.#state;
  }

  /** Runs `fn` unless the circuit is open; counts its failure or resets the count on success. */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#state === "open") throw this.#options.openError();
    const running = { started: Date.now() };
    this.#running.add(running);
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      if (this.#options.isFailure(error)) this.#failed();
      throw error;
    } finally {
      this.#running.delete(running);
    }
    // An answer that started before the circuit opened says little about now: only a probe closes it.
    if (this.#state === "closed") this.#failures = 0;
    return result;
  }

  /** Stops probing; calls after this run (or fail fast) as the state says, and nothing probes again. */
  dispose(): void {
    this.#disposed = true;
    this.#stopProbing();
    if (this.#stallTimer !== undefined) clearInterval(this.#stallTimer);
  }

  #failed(): void {
    if (this.#state === "open") return;
    this.#failures++;
    if (this.#failures >= this.#options.failureThreshold) this.#open(false);
  }

  #open(stalled: boolean): void {
    if (this.#state === "open" || this.#disposed) return;
    this.#state = "open";
    this.#options.onStateChange?.("open", { failures: this.#failures, stalled });
    this.#startProbing();
  }

  #checkStall(stallMs: number): void {
    if (this.#state === "open" || this.#stallProbe !== undefined) return;
    const now = Date.now();
    let stalled = false;
    for (const { started } of this.#running) if (now - started >= stallMs) stalled = true;
    if (!stalled) return;
    this.#stallProbe = this.#options.probe().then(
      () => {
        this.#stallProbe = undefined;
      },
      () => {
        this.#stallProbe = undefined;
        this.#open(true);
      },
    );
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
    this.#options.onStateChange?.("closed", { failures, stalled: false });
  }
}

/**
 * Repeats of one kind of failure are logged once per interval: during an outage every request
 * fails the same way, and a line (with its stack) per request wrote hundreds of MB a minute, onto
 * the disk the database may need. Metrics keep the full counts.
 */
const LOG_REPEAT_INTERVAL_MS = 10_000;

/** Kinds watched at once; beyond this many, new kinds share one window (a storm of distinct messages). */
const MAX_KINDS = 100;
const OTHER_KINDS = "\0other";

type Window = { suppressed: number; summarize: (repeats: number) => void; timer: NodeJS.Timeout };

export type LogThrottleOptions = { intervalMs?: number; maxKinds?: number };

/**
 * The first failure of a kind is logged in full at once (`line`); its repeats within the interval
 * are counted, and at the interval's end one line says how many there were (`summarize`, given
 * by the latest repeat, so it can name that request). A kind with no repeat in a whole interval is
 * forgotten: the next one is logged in full again. So each kind writes at most one line per
 * interval, and its stack once per bout.
 */
export class LogThrottle {
  readonly #intervalMs: number;
  readonly #maxKinds: number;
  readonly #windows = new Map<string, Window>();

  constructor(options: LogThrottleOptions = {}) {
    this.#intervalMs = options.intervalMs ?? LOG_REPEAT_INTERVAL_MS;
    this.#maxKinds = options.maxKinds ?? MAX_KINDS;
  }

  get intervalMs(): number {
    return this.#intervalMs;
  }

  log(kind: string, line: () => void, summarize: (repeats: number) => void): void {
    const key = this.#windows.has(kind) || this.#windows.size < this.#maxKinds ? kind : OTHER_KINDS;
    const open = this.#windows.get(key);
    if (open !== undefined) {
      open.suppressed++;
      open.summarize = summarize;
      return;
    }
    line();
    const window: Window = { suppressed: 0, summarize, timer: this.#tick(key) };
    this.#windows.set(key, window);
  }

  /** Writes the counts still held (at shutdown), and forgets every kind. */
  flush(): void {
    for (const window of this.#windows.values()) {
      clearTimeout(window.timer);
      if (window.suppressed > 0) window.summarize(window.suppressed);
    }
    this.#windows.clear();
  }

  #tick(key: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const window = this.#windows.get(key);
      if (window === undefined) return;
      if (window.suppressed === 0) {
        this.#windows.delete(key);
        return;
      }
      const repeats = window.suppressed;
      window.suppressed = 0;
      window.timer = this.#tick(key);
      window.summarize(repeats);
    }, this.#intervalMs);
    // A pending count never keeps the process alive; shutdown flushes it.
    timer.unref();
    return timer;
  }
}

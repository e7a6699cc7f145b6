import { Client } from "pg";

import { CHANGE_CHANNEL } from "./change-positions.ts";
import { listenerClientConfig, type PostgresSettings } from "./pool.ts";

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;

/**
 * Wake-ups from every instance on the database: one dedicated connection (outside the pool, which
 * would hand it to a statement) LISTENs on the change channel while anyone here is listening.
 * When it breaks it reconnects with backoff, and each new connection wakes the listeners once, as a
 * change may have committed while nobody was listening. Nothing is lost with a notification: the
 * feed reads positions from the log, so a missed one only waits for the next wake-up or poll.
 * Beside the circuit breaker rather than through it: it issues no statement a request waits for,
 * and its own backoff keeps it from hammering a database that is down; the store has it reconnect
 * when the breaker closes again.
 */
export class ChangeNotifications {
  readonly #settings: PostgresSettings;
  readonly #listeners = new Set<() => void>();
  #client: Client | undefined;
  #retryMs = FIRST_RETRY_MS;
  #retryTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(settings: PostgresSettings) {
    this.#settings = settings;
  }

  /** Calls `listener` on every notification and reconnection; returns what unsubscribes it. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (this.#client === undefined && this.#retryTimer === undefined && !this.#closed) void this.#connect();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#stop();
    };
  }

  /** Calls every listener now (a commit of this instance need not wait for its own NOTIFY). */
  wake(): void {
    for (const listener of this.#listeners) listener();
  }

  async #connect(): Promise<void> {
    const client = new Client(listenerClientConfig(this.#settings));
    this.#client = client;
    const lost = () => this.#lost(client);
    client.on("error", lost);
    client.on("end", lost);
    client.on("notification", () => this.wake());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
    } catch {
      lost();
      return;
    }
    if (this.#client !== client) return;
    this.#retryMs = FIRST_RETRY_MS;
    this.wake();
  }

  #lost(client: Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    if (this.#closed || this.#listeners.size === 0) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (!this.#closed && this.#listeners.size > 0) void this.#connect();
    }, this.#retryMs);
    this.#retryTimer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }

  /**
   * Drops the connection and opens a new one (which wakes the listeners): after an outage the old
   * one may be dead without knowing it (a cut network path is noticed only by TCP keepalive).
   */
  reconnect(): void {
    if (this.#closed || this.#listeners.size === 0 || this.#retryTimer !== undefined) return;
    this.#stop();
    this.#retryMs = FIRST_RETRY_MS;
    void this.#connect();
  }

  #stop(): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    const client = this.#client;
    this.#client = undefined;
    client?.end().catch(() => undefined);
  }

  close(): void {
    this.#closed = true;
    this.#listeners.clear();
    this.#stop();
  }
}

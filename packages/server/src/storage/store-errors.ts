/**
 * The database cannot be reached right now (refused, reset, timed out, terminated). Backends throw
 * it instead of driver errors so the HTTP layer can answer 503 (50300) rather than 500, and so a
 * caller knows a retry may succeed once the database is back.
 */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}

/**
 * The database answers but cannot do this now: a lock wait, a deadlock or a statement timeout.
 * Apart from StoreUnavailableError so the answer (503 STORAGE_BUSY) and the log send an operator
 * to the locks and long statements, not to the network. Never counted by the circuit breaker.
 */
export class StoreBusyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreBusyError";
  }
}

/**
 * Why the database could not do what was asked, as far as a caller can act on it. Each kind has
 * its own catalogue code (see ../errors.ts): an operator reading the answer or the log knows
 * whether to look at the network, at a lock, at the disk or at the file.
 *
 * - `unavailable`: it cannot be reached (refused, reset, timed out, terminated).
 * - `busy`: it is there but waits on a lock or a long statement (SQLite: SQLITE_BUSY/LOCKED).
 * - `full`: its disk is full (SQLITE_FULL).
 * - `read_only`: it may not be written (SQLITE_READONLY*: permissions, a read-only mount).
 * - `io`: reading or writing its files failed (SQLITE_IOERR*, SQLITE_CANTOPEN, SQLITE_NOMEM).
 * - `corrupt`: its file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB): a retry will not help.
 */
export type StoreFailureKind = "unavailable" | "busy" | "full" | "read_only" | "io" | "corrupt";

/**
 * A storage failure of a known kind. Backends throw it instead of driver errors, so the HTTP layer
 * answers 503 with the kind's code rather than 500, readiness can say why writes fail, and a
 * caller knows nothing of a failed write was stored. The message is for the log (the CLI prints
 * it); the HTTP layer never sends it.
 */
export class StoreError extends Error {
  readonly kind: StoreFailureKind;

  constructor(kind: StoreFailureKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreError";
    this.kind = kind;
  }
}

/** The database cannot be reached right now: a retry may succeed once it is back. */
export class StoreUnavailableError extends StoreError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("unavailable", message, options);
    this.name = "StoreUnavailableError";
  }
}

/** A StoreError as plain data, for crossing a thread boundary (postMessage keeps only an Error's message). */
export type StoreFailure = { kind: StoreFailureKind; message: string };

export function storeError(failure: StoreFailure): StoreError {
  return failure.kind === "unavailable"
    ? new StoreUnavailableError(failure.message)
    : new StoreError(failure.kind, failure.message);
}

import { StoreError, type StoreFailure, type StoreFailureKind } from "../store-errors.ts";

// SQLite's primary result codes (https://sqlite.org/rescode.html); node:sqlite reports the
// extended code in `errcode`, whose low byte is the primary one.
const KIND_BY_PRIMARY_CODE = new Map<number, StoreFailureKind>([
  [5, "busy"], // SQLITE_BUSY: another connection holds the write lock past our busy timeout
  [6, "busy"], // SQLITE_LOCKED: a conflict inside this process's shared cache
  [7, "io"], // SQLITE_NOMEM
  [8, "read_only"], // SQLITE_READONLY and its extended codes (a read-only file, mount or directory)
  [10, "io"], // SQLITE_IOERR and its extended codes
  [11, "corrupt"], // SQLITE_CORRUPT
  [13, "full"], // SQLITE_FULL: the disk (or a quota) is full
  [14, "io"], // SQLITE_CANTOPEN: the file or its directory is gone or not accessible
  [26, "corrupt"], // SQLITE_NOTADB
]);

const DESCRIPTION: Record<StoreFailureKind, string> = {
  unavailable: "the database is not reachable",
  busy: "the database is locked by another connection",
  full: "the database's disk is full",
  read_only: "the database cannot be written",
  io: "the database's files could not be read or written",
  corrupt: "the database file is damaged",
};

/** The kind of a node:sqlite error, or undefined for one that is not about the storage (a bug, a constraint). */
function sqliteFailureKind(error: unknown): StoreFailureKind | undefined {
  if (!(error instanceof Error)) return undefined;
  const errcode = (error as { errcode?: unknown }).errcode;
  return typeof errcode === "number" ? KIND_BY_PRIMARY_CODE.get(errcode & 0xff) : undefined;
}

/**
 * A storage failure as plain data (the writer thread posts it), or undefined. The message keeps
 * SQLite's own words for the log.
 */
export function sqliteFailure(error: unknown): StoreFailure | undefined {
  const kind = sqliteFailureKind(error);
  if (kind === undefined) return undefined;
  const detail = (error as { errstr?: string }).errstr ?? (error as Error).message;
  return { kind, message: `${DESCRIPTION[kind]} (SQLite: ${String(detail)})` };
}

/** The error to throw for a failed SQLite call on this thread: a StoreError when the storage failed. */
export function asSqliteStoreError(error: unknown): unknown {
  const failure = sqliteFailure(error);
  return failure === undefined ? error : new StoreError(failure.kind, failure.message, { cause: error });
}

import {
  Client,
  type ClientConfig,
  DatabaseError,
  Pool,
  type PoolClient,
  type QueryResultRow,
  TypeOverrides,
} from "pg";

import { StoreError, StoreUnavailableError } from "../store-errors.ts";

/**
 * The one place that turns a `postgres://` URL into connections. Every PostgreSQL table of the
 * service (plants, webhooks, and later tokens) goes through a pool made here, so the connection
 * settings, exact int8 parsing and the "unavailable" classification are the same everywhere.
 */
export type PostgresSettings = {
  /** `postgres://` or `postgresql://` (libpq URL syntax: user, password, host, port, database, `?sslmode=` …). */
  url: string;
  /** Most connections this process opens (`PLANTSTORE_PG_POOL_SIZE`). */
  poolSize: number;
  /** Longest wait to open a connection or to get a free one from a full pool (`PLANTSTORE_PG_CONNECT_TIMEOUT_MS`). */
  connectTimeoutMs: number;
  /** Longest a statement may run (server `statement_timeout`), and how long we wait for its answer (`PLANTSTORE_PG_QUERY_TIMEOUT_MS`). */
  queryTimeoutMs: number;
  /** Shown in `pg_stat_activity`; a `?application_name=` in the URL wins. */
  applicationName?: string;
  /**
   * Errors of idle connections (the server went away between queries), classified as any other
   * failure (a StoreUnavailableError whose cause is the driver's error). They are dropped and
   * replaced; this is for logging.
   */
  onIdleError?: (error: Error) => void;
};

const INT8 = 20;

/**
 * `int8` (ids, times) as an exact BigInt; node-postgres would hand it over as a string. Per pool,
 * not through the process-wide `types.setTypeParser`, so nothing else in the process changes.
 */
function exactTypes(): TypeOverrides {
  const types = new TypeOverrides();
  types.setTypeParser(INT8, (text: string) => BigInt(text));
  return types;
}

// The client waits a little longer than the server's statement_timeout, so a slow statement is
// cancelled by the server (a clean error) and only a lost network trips the client-side timer.
const CLIENT_GRACE_MS = 1_000;

function clientConfig(settings: PostgresSettings, { forMigrations = false } = {}): ClientConfig {
  const url = new URL(settings.url);
  const hasApplicationName = url.searchParams.has("application_name");
  return {
    connectionString: settings.url,
    types: exactTypes(),
    connectionTimeoutMillis: settings.connectTimeoutMs,
    // Migrations may build indexes on big tables: no statement limit for them.
    statement_timeout: forMigrations ? 0 : settings.queryTimeoutMs,
    ...(forMigrations ? {} : { query_timeout: settings.queryTimeoutMs + CLIENT_GRACE_MS }),
    // A transaction left open by a bug or a stalled process must not hold locks for long.
    idle_in_transaction_session_timeout: Math.max(settings.queryTimeoutMs * 2, 10_000),
    ...(hasApplicationName ? {} : { application_name: settings.applicationName ?? "plantstore" }),
    // A 200 means committed: insist on synchronous commit whatever the server's default says.
    options: [url.searchParams.get("options"), "-c synchronous_commit=on"]
      .filter((o) => o !== null && o !== "")
      .join(" "),
    // Notice a peer that vanished (a cut network) on idle connections too.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
}

/** A connection of its own that only LISTENs: no statement limit (it waits idle), a name in pg_stat_activity. */
export function listenerClientConfig(settings: PostgresSettings): ClientConfig {
  const config = clientConfig(settings, { forMigrations: true });
  return new URL(settings.url).searchParams.has("application_name")
    ? config
    : { ...config, application_name: `${settings.applicationName ?? "plantstore"}-listen` };
}

/** The error a pooled connection broke with: one that broke while checked out is destroyed on release, never reused. */
const brokenConnections = new WeakMap<PoolClient, Error>();

export function createPostgresPool(settings: PostgresSettings): Pool {
  const pool = new Pool({
    ...clientConfig(settings),
    max: settings.poolSize,
    idleTimeoutMillis: 30_000,
  });
  // Without a listener, an idle connection that the server drops (restart, pg_terminate_backend)
  // would crash the process; the pool already discards it and opens a new one on demand.
  pool.on("error", (error) => {
    const failure = asStoreError(error);
    settings.onIdleError?.(failure instanceof Error ? failure : error);
  });
  // pg-pool takes its own 'error' listener off a connection while it is checked out, and a Client
  // whose session ends between statements emits 'error': with no listener, an uncaught exception
  // that ends the process. This one stays for the connection's life; the statement under way (or
  // the next) fails on its own, as unavailable.
  pool.on("connect", (client) => client.on("error", (error) => brokenConnections.set(client, error)));
  return pool;
}

/** A single connection outside the pool, without a statement limit: for migrations. */
export async function connectForMigrations(settings: PostgresSettings): Promise<Client> {
  const client = new Client(clientConfig(settings, { forMigrations: true }));
  client.on("error", () => {
    // Reported to the query that is waiting, if any; nothing else to do for a one-off connection.
  });
  try {
    await client.connect();
  } catch (error) {
    throw asStoreError(error);
  }
  return client;
}

/**
 * Whether the database answers now: `SELECT 1` on a fresh connection (never a pooled one, which may
 * be stuck behind the very statements that stalled), all of it within `timeoutMs`.
 */
export async function probeDatabase(settings: PostgresSettings, timeoutMs: number): Promise<void> {
  const client = new Client({
    ...clientConfig(settings),
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs,
    application_name: "plantstore-probe",
  });
  client.on("error", () => {
    // Reported to the probe's own connect or query; nothing else waits on this connection.
  });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    // Not awaited: on a silent network the goodbye may never be acknowledged (end() drops a
    // connection with a hung query at once; the timers above dropped a hung connect).
    client.end().catch(() => undefined);
    throw asStoreError(error);
  }
  await client.end().catch(() => undefined);
}

const UNAVAILABLE_NODE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

// node-postgres reports these without a code.
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /^Query read timeout$/,
  /not queryable/,
  /^Client was closed and is not queryable$/,
];

/**
 * Is this failure "the database cannot be reached right now" rather than a bug or a refusal?
 * SQLSTATE class 08 (connection exception), 57P01–57P03 (terminated by an administrator, crash,
 * starting up), 53300 (too many connections). A statement cancelled by the server is not here:
 * the database answered (see busyCause).
 */
function isUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseError) {
    const code = error.code ?? "";
    return code.startsWith("08") || ["57P01", "57P02", "57P03", "53300"].includes(code);
  }
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && UNAVAILABLE_NODE_CODES.has(code)) return true;
  if (error instanceof AggregateError) return error.errors.some(isUnavailable);
  return UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(error.message));
}

/**
 * What held a statement up when the database answered but would not do it now, named for the log
 * and the operator: a lock wait (55P03: `lock_timeout`, `NOWAIT`), a deadlock (40P01), or a
 * statement timeout (57014: `statement_timeout`; or cancelled by someone). Undefined for anything else.
 */
function busyCause(error: unknown): "lock wait" | "deadlock" | "statement timeout" | "statement cancelled" | undefined {
  if (!(error instanceof DatabaseError)) return undefined;
  switch (error.code) {
    case "55P03":
      return "lock wait";
    case "40P01":
      return "deadlock";
    case "57014":
      if (/lock timeout/.test(error.message)) return "lock wait";
      // Otherwise `pg_cancel_backend` by an operator or a tool.
      return /statement timeout/.test(error.message) ? "statement timeout" : "statement cancelled";
    default:
      return undefined;
  }
}

/** node-postgres gave up waiting for a statement's answer (`query_timeout`): silent network, or a stuck server. */
export function isClientQueryTimeout(error: unknown): boolean {
  const cause = error instanceof StoreUnavailableError ? error.cause : error;
  return cause instanceof Error && /^Query read timeout$/.test(cause.message);
}

/**
 * A connection that worked and then broke (terminated by the server, reset): a statement that
 * is safe to repeat may be tried once more on a fresh connection. Not for timeouts, so an outage
 * never doubles the wait.
 */
export function isBrokenConnection(error: unknown): boolean {
  if (error instanceof DatabaseError) return ["57P01", "57P02"].includes(error.code ?? "");
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ECONNRESET" || code === "EPIPE" || /^Connection terminated unexpectedly$/.test(error.message);
}

export function asStoreError(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  // The cause's text helps an operator (the CLI prints it); the HTTP layer never sends it.
  const detail = error instanceof Error && error.message !== "" ? `: ${error.message}` : "";
  const busy = busyCause(error);
  if (busy !== undefined) return new StoreError("busy", `the database is busy, ${busy}${detail}`, { cause: error });
  if (!isUnavailable(error)) return error;
  return new StoreUnavailableError(`the database is not reachable${detail}`, { cause: error });
}

/**
 * One query, with unavailability turned into StoreUnavailableError and lock waits into a StoreError
 * of kind `busy`. A `name` makes it a prepared statement on each connection (parsed and planned once, not per call): for the hot statements.
 * Measured on the batch insert: 1.1–1.5× the statements per second.
 */
export async function query<R extends QueryResultRow>(
  pool: Pool,
  text: string,
  values?: unknown[],
  name?: string,
): Promise<R[]> {
  try {
    return (await pool.query<R>(name === undefined ? { text, values } : { name, text, values })).rows;
  } catch (error) {
    throw asStoreError(error);
  }
}

/**
 * Runs `work` in one transaction on one pooled connection. A connection that failed is destroyed
 * rather than returned to the pool, so the next caller never inherits a broken or half-open one.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw asStoreError(error);
  }
  let failure: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    failure = error instanceof Error ? error : new Error(String(error));
    await client.query("ROLLBACK").catch(() => undefined);
    throw asStoreError(error);
  } finally {
    client.release(
      brokenConnections.get(client) ?? (failure !== undefined && isUnavailable(failure) ? failure : undefined),
    );
  }
}

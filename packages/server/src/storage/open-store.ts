import { resolve } from "node:path";

import type { ChangeLog } from "../changes/change-log.ts";
import type { PostgresBreakerSettings } from "../resilience/postgres-breaker.ts";
import type { ChangeRetention } from "./change-rows.ts";
import type { PlantStore } from "./plant-store.ts";
import type { PostgresSettings } from "./postgres/pool.ts";
import { DEFAULT_POSTGRES_SETTINGS, isPostgresUrl } from "./postgres/settings.ts";
import { type Durability, SqliteStore } from "./sqlite/sqlite-store.ts";
import { SqliteTokenStore } from "./sqlite/token-store.ts";
import { SqliteWebhookAdmin } from "./sqlite/webhook-admin.ts";
import type { TokenStore } from "./token-store.ts";
import type { WebhookAdmin } from "./webhook-admin.ts";
import type { WebhookQueue } from "./webhook-queue.ts";
import type { WriteHealth } from "./write-health.ts";

export type OpenStoreOptions = {
  /** SQLite only: PostgreSQL always commits synchronously. */
  durability?: Durability;
  onCommit?: (batchSize: number, commitMs: number) => void;
  /** SQLite only: how long a write waits for another connection's lock (PLANTSTORE_SQLITE_BUSY_TIMEOUT_MS). */
  busyTimeoutMs?: number;
  /** Told how each write batch went, for readiness (both backends). */
  writeHealth?: WriteHealth;
  /** PostgreSQL pool settings; defaults in DEFAULT_POSTGRES_SETTINGS. */
  postgres?: Partial<Omit<PostgresSettings, "url">>;
  /** PostgreSQL's circuit breaker; defaults in DEFAULT_POSTGRES_BREAKER. */
  postgresBreaker?: Partial<PostgresBreakerSettings>;
};

const USAGE = "use sqlite:<path>, sqlite::memory: or postgres://user@host:port/database";

/** The file a `sqlite:` URL names, absolute (a relative path starts from the working directory), or `:memory:`. */
export function sqlitePath(databaseUrl: string): string {
  const path = databaseUrl.slice("sqlite:".length);
  if (path.length === 0) throw new Error("DATABASE_URL sqlite: needs a path, e.g. sqlite:./data/plantstore.db");
  return path === ":memory:" ? path : resolve(path);
}

function postgresSettings(databaseUrl: string, options: OpenStoreOptions): PostgresSettings {
  return { ...DEFAULT_POSTGRES_SETTINGS, ...options.postgres, url: databaseUrl };
}

/**
 * Picks the backend from `DATABASE_URL` (`sqlite:<path>`, `sqlite::memory:`, `postgres://…` or
 * `postgresql://…`) and applies pending migrations before returning.
 */
export async function openStore(
  databaseUrl: string,
  options: OpenStoreOptions = {},
): Promise<PlantStore & WebhookQueue & ChangeLog & ChangeRetention> {
  if (databaseUrl.startsWith("sqlite:")) return SqliteStore.open({ path: sqlitePath(databaseUrl), ...options });
  if (isPostgresUrl(databaseUrl)) {
    // The PostgreSQL modules (and `pg` under them) are imported only for a postgres:// URL, here
    // and below, so a SQLite server or command starts without them (server.ts does the same for
    // ioredis and jose; together a sixth of a SQLite start, the README's Deployment section).
    const { PostgresStore } = await import("./postgres/postgres-store.ts");
    return PostgresStore.open({
      ...postgresSettings(databaseUrl, options),
      onCommit: options.onCommit,
      breaker: options.postgresBreaker,
      writeHealth: options.writeHealth,
    });
  }
  throw new Error(`DATABASE_URL: unsupported scheme ${JSON.stringify(databaseUrl.split(":")[0])}; ${USAGE}`);
}

/** The webhook administration of the same database (migrated first, so it works on a fresh one). */
export async function openWebhookAdmin(databaseUrl: string, options: OpenStoreOptions = {}): Promise<WebhookAdmin> {
  if (databaseUrl.startsWith("sqlite:") && sqlitePath(databaseUrl) === ":memory:") {
    throw new Error("webhooks commands need a database that outlives the command: sqlite:<file> or postgres://…");
  }
  await (await openStore(databaseUrl, options)).close();
  if (databaseUrl.startsWith("sqlite:")) return new SqliteWebhookAdmin(sqlitePath(databaseUrl));
  const { PostgresWebhookAdmin } = await import("./postgres/webhook-admin.ts");
  return new PostgresWebhookAdmin(postgresSettings(databaseUrl, options));
}

/**
 * The token store of the same database. Open it after `openStore` (which applies migrations);
 * `role` says who uses it: the serving process, or the `tokens` commands.
 */
export async function openTokenStore(
  databaseUrl: string,
  role: "server" | "admin",
  options: OpenStoreOptions = {},
): Promise<TokenStore> {
  if (databaseUrl.startsWith("sqlite:")) return SqliteTokenStore.open({ path: sqlitePath(databaseUrl), role });
  if (isPostgresUrl(databaseUrl)) {
    const { PostgresTokenStore } = await import("./postgres/token-store.ts");
    return new PostgresTokenStore(postgresSettings(databaseUrl, options), role);
  }
  throw new Error(`DATABASE_URL: unsupported scheme ${JSON.stringify(databaseUrl.split(":")[0])}; ${USAGE}`);
}

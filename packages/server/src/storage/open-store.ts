import { resolve } from "node:path";
import type { PlantStore } from "./plant-store.ts";
import type { WebhookQueue } from "./webhook-queue.ts";
import { SqliteStore, type Durability } from "./sqlite/sqlite-store.ts";
import { SqliteTokenStore } from "./sqlite/token-store.ts";
import type { TokenStore } from "./token-store.ts";

export type OpenStoreOptions = {
  durability?: Durability;
  onCommit?: (batchSize: number, commitMs: number) => void;
};

/** Picks the backend from `DATABASE_URL`: `sqlite:<path>` or `sqlite::memory:`. */
export function openStore(databaseUrl: string, options: OpenStoreOptions = {}): PlantStore & WebhookQueue {
  if (databaseUrl.startsWith("sqlite:")) {
    const path = databaseUrl.slice("sqlite:".length);
    if (path.length === 0) throw new Error("DATABASE_URL sqlite: needs a path, e.g. sqlite:./data/plantstore.db");
    return SqliteStore.open({ path: path === ":memory:" ? path : resolve(path), ...options });
  }
  throw new Error(`DATABASE_URL: unsupported scheme in ${JSON.stringify(databaseUrl.split(":")[0])}; use sqlite:<path>`);
}

/**
 * The token store of the same database. Open it after `openStore` (which applies migrations);
 * `role` says who uses it (see SqliteTokenStoreOptions).
 */
export function openTokenStore(databaseUrl: string, role: "server" | "admin"): TokenStore {
  if (databaseUrl.startsWith("sqlite:")) {
    const path = databaseUrl.slice("sqlite:".length);
    return SqliteTokenStore.open({ path: path === ":memory:" ? path : resolve(path), role });
  }
  throw new Error(`DATABASE_URL: unsupported scheme in ${JSON.stringify(databaseUrl.split(":")[0])}; use sqlite:<path>`);
}

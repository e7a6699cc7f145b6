import type { Pool } from "pg";

import { query } from "./pool.ts";

/**
 * The secret named `name` in `store_secrets`, added with `fresh()` when the database has none yet.
 * The read after the insert is a statement of its own: under READ COMMITTED it sees the row of an
 * instance whose insert won the race, which the insert waited for and then left alone.
 */
export async function storeSecret(pool: Pool, name: string, fresh: () => Uint8Array): Promise<Uint8Array> {
  const read = () => query<{ secret: Buffer }>(pool, "SELECT secret FROM store_secrets WHERE name = $1", [name]);
  const [stored] = await read();
  if (stored !== undefined) return stored.secret;
  await query(
    pool,
    "INSERT INTO store_secrets (name, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
    [name, fresh(), Date.now()],
  );
  const [row] = await read();
  return row!.secret;
}

import type { DatabaseSync } from "node:sqlite";

/**
 * The secret named `name` in `store_secrets`, added with `fresh()` when the database has none yet.
 * Processes opening one new file together all end up with the row the first insert left; once it
 * exists, opening the store only reads it.
 */
export function storeSecret(db: DatabaseSync, name: string, fresh: () => Uint8Array): Uint8Array {
  const read = db.prepare("SELECT secret FROM store_secrets WHERE name = ?");
  const stored = read.get(name) as { secret: Uint8Array } | undefined;
  if (stored !== undefined) return stored.secret;
  db.prepare("INSERT INTO store_secrets (name, secret, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING").run(
    name,
    fresh(),
    Date.now(),
  );
  return (read.get(name) as { secret: Uint8Array }).secret;
}

/**
 * What choosing and configuring the PostgreSQL backend needs, kept apart from pool.ts so that
 * neither loads `pg`: a SQLite server never loads the PostgreSQL modules (see open-store.ts).
 */

/** Whether `DATABASE_URL` names PostgreSQL. */
export function isPostgresUrl(url: string): boolean {
  return url.startsWith("postgres://") || url.startsWith("postgresql://");
}

export const DEFAULT_POSTGRES_SETTINGS = { poolSize: 10, connectTimeoutMs: 5_000, queryTimeoutMs: 10_000 } as const;

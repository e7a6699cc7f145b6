/**
 * Whether `DATABASE_URL` names PostgreSQL. Kept apart from pool.ts so that deciding the backend
 * does not load `pg`: a SQLite server never loads the PostgreSQL modules (see open-store.ts).
 */
export function isPostgresUrl(url: string): boolean {
  return url.startsWith("postgres://") || url.startsWith("postgresql://");
}

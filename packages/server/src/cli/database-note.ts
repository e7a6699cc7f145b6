import { existsSync } from "node:fs";

import { sqlitePath } from "../storage/open-store.ts";
import { isPostgresUrl } from "../storage/postgres/settings.ts";

/**
 * Which database a command is about to open, as it tells its user. A relative SQLite path depends
 * on the working directory, so two commands run from two folders can silently use two files: each
 * command names the file by its absolute path, and says when it has just created it, which is the
 * moment a user is most likely in the wrong folder.
 */
export type DatabaseNote = {
  /** A SQLite file's absolute path, `:memory:`, or a PostgreSQL URL without its password. */
  database: string;
  /** True when the URL names a SQLite file that does not exist yet: opening it creates it. */
  creates: boolean;
  /** The sentence for stderr, once the database is open. */
  opened: string;
};

/**
 * A database URL fit to print: a PostgreSQL password never reaches the terminal or the log, nor
 * do the URL's parameters (libpq takes `password` and `sslpassword` there too).
 */
function withoutPassword(databaseUrl: string): string {
  if (!isPostgresUrl(databaseUrl)) return databaseUrl;
  const url = new URL(databaseUrl);
  if (url.password !== "") url.password = "***";
  url.search = "";
  return url.toString();
}

/** Looks at the URL before the database is opened (whether a SQLite file exists is only known then). */
export function noteDatabase(databaseUrl: string): DatabaseNote {
  if (!databaseUrl.startsWith("sqlite:")) {
    const database = withoutPassword(databaseUrl);
    const kind = isPostgresUrl(databaseUrl) ? "the PostgreSQL database" : "the database";
    return { database, creates: false, opened: `using ${kind} ${database}` };
  }
  const path = sqlitePath(databaseUrl);
  if (path === ":memory:") {
    return { database: path, creates: false, opened: "using an in-memory SQLite database, gone when the process ends" };
  }
  if (existsSync(path)) return { database: path, creates: false, opened: `using the SQLite database ${path}` };
  return {
    database: path,
    creates: true,
    opened: `created a new SQLite database ${path} (no file was there; a relative DATABASE_URL is resolved against the working directory)`,
  };
}

/** Opens the database with `open`, then says on stderr which one it was (nothing when opening failed: the error says why). */
export async function openNoted<T>(databaseUrl: string, open: () => Promise<T>): Promise<T> {
  const note = noteDatabase(databaseUrl);
  const opened = await open();
  process.stderr.write(`plantstore-server: ${note.opened}\n`);
  return opened;
}

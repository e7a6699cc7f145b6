/**
 * Versioned, append-only schema changes for SQLite. A released migration is never edited; a new
 * change is a new entry. Each runs in its own transaction with its version recorded.
 */
export const sqliteMigrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: "create plants",
    // INTEGER PRIMARY KEY is the 64-bit rowid: the whole int64 range, stored exactly.
    sql: `CREATE TABLE plants (
            id   INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            tag  TEXT
          ) STRICT;`,
  },
  {
    version: 2,
    name: "index plants by tag",
    // GET /plants?tag=… pages by id within one tag.
    sql: "CREATE INDEX plants_tag_id ON plants (tag, id);",
  },
];

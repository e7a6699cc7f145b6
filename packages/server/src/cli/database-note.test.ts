import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, describe, expect, it } from "vitest";

import { noteDatabase } from "./database-note.ts";

const dir = mkdtempSync(join(tmpdir(), "plantstore-database-note-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("noteDatabase: which database a command names", () => {
  it("names a PostgreSQL database by its URL, never with its password or parameters", () => {
    expect(noteDatabase("postgres://admin:s3cret@db.internal:5432/plants?sslmode=require")).toEqual({
      database: "postgres://admin:***@db.internal:5432/plants",
      creates: false,
      opened: "using the PostgreSQL database postgres://admin:***@db.internal:5432/plants",
    });
    expect(noteDatabase("postgresql://admin@db.internal/plants?password=s3cret").database).toBe(
      "postgresql://admin@db.internal/plants",
    );
  });

  it("names a SQLite file by its absolute path, and whether opening it creates it", () => {
    const existing = join(dir, "existing.db");
    writeFileSync(existing, "");
    expect(noteDatabase(`sqlite:${existing}`)).toMatchObject({ database: existing, creates: false });
    expect(noteDatabase(`sqlite:${join(dir, "new.db")}`)).toMatchObject({
      database: join(dir, "new.db"),
      creates: true,
    });
    expect(noteDatabase(`sqlite:./data/x.db`).database).toBe(join(process.cwd(), "data", "x.db"));
  });

  it("says an in-memory database does not outlive the process", () => {
    expect(noteDatabase("sqlite::memory:")).toMatchObject({ database: ":memory:", creates: false });
  });
});

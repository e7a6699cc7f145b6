import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";

import { afterEach, describe, expect, it } from "vitest";

import { migrations } from "../migrations.ts";

const BIN = fileURLToPath(new URL("../../../dist/bin.js", import.meta.url));

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("plantstore-server migrate without DATABASE_URL", () => {
  it("creates ./data/plantstore.db in the working directory, in WAL mode, with every migration applied", async () => {
    dir = mkdtempSync(join(tmpdir(), "plantstore-default-"));
    const env = { ...process.env };
    delete env["DATABASE_URL"];
    const child = spawn(process.execPath, [BIN, "migrate"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code, output).toBe(0);

    const file = join(dir, "data", "plantstore.db");
    expect(existsSync(file)).toBe(true);
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      // journal_mode=WAL is a property of the file, so a second connection sees it.
      expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      const versions = db
        .prepare("SELECT version FROM schema_migrations ORDER BY version")
        .all()
        .map((r) => Number(r["version"]));
      expect(versions).toEqual(migrations.map((m) => m.version));
      expect(db.prepare("SELECT type FROM pragma_table_info('plants') WHERE name = 'id'").get()).toEqual({
        type: "INTEGER",
      });
    } finally {
      db.close();
    }
  });
});

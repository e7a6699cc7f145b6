import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { fakeNodeVersion, findOlderNode, SUPPORTED_NODE } from "@plantstore/test-support/older-node";
import { describe, it, onTestFinished } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { createTestDatabase, TEST_BACKEND } from "../support/test-database.ts";

const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

// Side by side: each test only waits on its own process.
describe.concurrent("plantstore-server serve (the built bin, as a process)", () => {
  it(`serves POST /plants on ${TEST_BACKEND}, logs JSON without the token, and exits 0 on SIGTERM`, async ({
    expect,
  }) => {
    const database = await createTestDatabase();
    const token = "bin-test-secret-token";
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], {
      env: { ...process.env, PLANTSTORE_TOKENS: token, DATABASE_URL: database.url, PLANTSTORE_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        // eslint-disable-next-line no-restricted-syntax -- a guard that fails a start that never says it listens
        const timer = setTimeout(() => reject(new Error(`no listening line in: ${output}`)), 15_000);
        child.stdout.on("data", () => {
          const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
          if (match?.[1] !== undefined) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
        child.on("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
      });
      const created = await rawRequest(url, {
        method: "POST",
        path: "/plants",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: '{"id":9223372036854775807,"name":"Fern"}',
      });
      expect(created.status).toBe(200);
      expect(created.text).toBe('{"name":"Fern"}');
      const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exit).toBe(0);
      for (const line of output.trim().split("\n")) expect(() => JSON.parse(line) as unknown).not.toThrow();
      expect(output).not.toContain(token);
    } finally {
      child.kill("SIGKILL");
      await database.dispose();
    }
  });

  it("exits 2 on bad usage", async ({ expect }) => {
    const child = spawn(process.execPath, [BIN, "serve", "--no-such-flag"], { stdio: ["ignore", "pipe", "pipe"] });
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    expect(code).toBe(2);
  });
});

/** This process's environment without DATABASE_URL, as a user's who relies on the default. */
function defaultDatabaseEnv(logLevel: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PLANTSTORE_LOG_LEVEL: logLevel };
  delete env["DATABASE_URL"];
  return env;
}

/** Runs the built bin in `cwd` with DATABASE_URL unset. */
function runIn(cwd: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = defaultDatabaseEnv("silent");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

function scratchFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-bin-cwd-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("plantstore-server's admin commands say which database they opened", () => {
  it("name the default SQLite file by its absolute path, in the working directory, and say when they just created it", async ({
    expect,
  }) => {
    const [first, second] = [scratchFolder(), scratchFolder()];
    const [firstDb, secondDb] = [join(first, "data", "plantstore.db"), join(second, "data", "plantstore.db")];

    const created = await runIn(first, ["tokens", "create", "--name", "importer", "--scopes", "plants:read"]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^ps_\S+\n$/);
    expect(created.stderr.split("\n")[0]).toBe(
      `plantstore-server: created a new SQLite database ${firstDb} (no file was there; a relative DATABASE_URL is resolved against the working directory)`,
    );

    // The same folder: the same file, which now exists.
    const listed = await runIn(first, ["tokens", "list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("importer");
    expect(listed.stderr).toBe(`plantstore-server: using the SQLite database ${firstDb}\n`);

    // Another folder: another file, and the command says so instead of showing an empty list silently.
    const elsewhere = await runIn(second, ["webhooks", "list"]);
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(elsewhere.stdout).toBe("no subscribers\n");
    expect(elsewhere.stderr).toBe(
      `plantstore-server: created a new SQLite database ${secondDb} (no file was there; a relative DATABASE_URL is resolved against the working directory)\n`,
    );
    expect(existsSync(secondDb)).toBe(true);

    // A relative --database-url is resolved the same way.
    const relative = `sqlite:../${first.split("/").at(-1)}/data/plantstore.db`;
    const migrated = await runIn(second, ["migrate", "--database-url", relative]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toBe("migrations applied\n");
    expect(migrated.stderr).toBe(`plantstore-server: using the SQLite database ${firstDb}\n`);
  });
});

describe("plantstore-server serve says which database it opened", () => {
  it("logs the SQLite file by its absolute path when listening, and that it created it", async ({ expect }) => {
    const folder = scratchFolder();
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], {
      cwd: folder,
      env: defaultDatabaseEnv("info"),
      stdio: ["ignore", "pipe", "pipe"],
    });
    onTestFinished(() => void child.kill("SIGKILL"));
    let output = "";
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const lines = await new Promise<Array<{ msg: string; database?: string }>>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        const parsed = output
          .split("\n")
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line) as { msg: string; database?: string });
        if (parsed.some((line) => line.msg === "plantstore listening")) resolve(parsed);
      });
      child.on("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
    });
    const database = join(folder, "data", "plantstore.db");
    expect(lines.find((line) => line.msg === "plantstore listening")?.database).toBe(database);
    expect(lines.find((line) => line.msg.startsWith("created a new SQLite database"))).toEqual(
      expect.objectContaining({
        database,
        msg: `created a new SQLite database ${database} (no file was there; a relative DATABASE_URL is resolved against the working directory)`,
      }),
    );
  });
});

/** `node <flags> dist/bin.js <args>` with `node`, to completion. */
function runWith(
  node: string,
  flags: string[],
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [...flags, BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const OLDER_NODE = findOlderNode();

describe(`plantstore-server on a Node older than ${SUPPORTED_NODE}`, () => {
  it("says which Node it needs, in one line on stderr, and exits 1 before loading the program (a faked 20.0.0)", async ({
    expect,
  }) => {
    const result = await runWith(process.execPath, fakeNodeVersion("20.0.0"), ["--help"]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `plantstore-server needs Node ≥ ${SUPPORTED_NODE}, found 20.0.0\n`,
    });
  });

  // Only a real older Node shows the check runs before the imports it cannot load (node:sqlite);
  // the CI image has one at /usr/bin/node. The title says which ran.
  it(
    OLDER_NODE === undefined
      ? `says so under a real older Node too: none found on this machine, so only the faked version above ran`
      : `says so under a real older Node too, ${OLDER_NODE.path} (${OLDER_NODE.version}), which has no node:sqlite`,
    async ({ expect, annotate }) => {
      if (OLDER_NODE === undefined) {
        await annotate(`no Node older than ${SUPPORTED_NODE} on this machine: the bin ran under a faked version only`);
        return;
      }
      for (const args of [["--help"], ["serve"], ["tokens", "list"]]) {
        const result = await runWith(OLDER_NODE.path, [], args);
        expect(result, args.join(" ")).toEqual({
          code: 1,
          stdout: "",
          stderr: `plantstore-server needs Node ≥ ${SUPPORTED_NODE}, found ${OLDER_NODE.version}\n`,
        });
      }
    },
  );
});

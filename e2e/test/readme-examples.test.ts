import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlantStoreClient, PlantStoreError } from "@plantstore/client";
import * as plantStoreServer from "@plantstore/server";
import type { RunningServer } from "@plantstore/server";
import { checkedFetch } from "@plantstore/test-support/checked-fetch";
import { startRealServer, type RealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, ROOT, run, runOk } from "./workspace.ts";

/**
 * The README's "Using it" examples, run as a reader would paste them: the curl lines through bash,
 * the client snippet type-checked and run with Node, the CLI lines through a `plantstore` on PATH.
 * What each example says it prints (its `# …` comments) is what it must print, so the first page a
 * user reads cannot drift from what the software does.
 */

const README = readFileSync(join(ROOT, "README.md"), "utf8");
/** Where the examples point; the tests point them at a real server instead. */
const EXAMPLE_URL = "http://127.0.0.1:3000";

/** The text under a `###` heading, up to the next heading. */
function section(title: string): string {
  const start = README.indexOf(`\n### ${title}\n`);
  if (start < 0) throw new Error(`README has no "### ${title}" section`);
  const next = README.slice(start + 1).search(/\n#{2,3} /);
  return next < 0 ? README.slice(start) : README.slice(start, start + 1 + next);
}

/** The fenced code blocks of one language in a piece of Markdown. */
function codeBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, "gm"))].map((m) => m[1]!);
}

/** What an example says it prints: its lines that are whole comments, without the `# `. */
const printedLines = (block: string) =>
  block
    .split("\n")
    .filter((line) => line.startsWith("# "))
    .map((line) => line.slice(2));

/** Where the examples run: their working directory, the client example's project, the CLI's bin. */
const dir = mkdtempSync(join(tmpdir(), "plantstore-readme-"));
let server: RealServer<RunningServer>;

beforeAll(async () => {
  server = await startRealServer(plantStoreServer);
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An example pasted into bash, pointed at the test's server; its stdout. */
function bash(script: string, env: Record<string, string> = {}): Promise<string> {
  return runOk("bash", ["-euo", "pipefail", "-c", script.replaceAll(EXAMPLE_URL, server.url)], { cwd: dir, env: cleanEnv(env) });
}

describe("README: Using it", () => {
  it("curl: creating a plant prints what the README shows", async () => {
    const [createBlock] = codeBlocks(section("curl"), "sh");
    expect(createBlock).toContain("curl");
    const stdout = await bash(createBlock!, { PLANTSTORE_TOKEN: TOKEN });
    expect(stdout.trim()).toBe(printedLines(createBlock!).join("\n"));
  });

  it("curl: listing shows the README's page and Link, and the delete it shows deletes", async () => {
    const listBlock = codeBlocks(section("curl"), "sh").find((block) => block.includes("DELETE"));
    expect(listBlock).toBeDefined();
    // The plants the example's page shows; the earlier example's fern (id 2^63 - 1) makes a next page.
    const store = createPlantStoreClient({ baseUrl: server.url, token: TOKEN, fetch: checkedFetch });
    await store.createPlant({ id: 7n, name: "Fern", tag: "fern" });
    await store.createPlant({ id: 9n, name: "Maidenhair", tag: "fern" });
    const lines = (await bash(listBlock!, { PLANTSTORE_TOKEN: TOKEN })).split(/\r?\n/);
    for (const expected of printedLines(listBlock!)) expect(lines).toContain(expected);
    // The example's DELETE took plant 7 away: deleting it again is a 404.
    await expect(store.deletePlant(7n)).rejects.toSatisfy((error) => error instanceof PlantStoreError && error.status === 404);
  });

  it("the client snippet type-checks, runs, and reports errors with the fields it names", { timeout: 60_000 }, async () => {
    const [snippet] = codeBlocks(section("The typed client (`@plantstore/client`)"), "ts");
    expect(snippet).toContain("createPlantStoreClient");
    // A project of the reader's: ESM, with the workspace's installed packages.
    const project = join(dir, "client-example");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
    symlinkSync(join(ROOT, "e2e", "node_modules"), join(project, "node_modules"), "dir");
    const file = join(project, "example.ts");
    writeFileSync(file, snippet!.replaceAll(EXAMPLE_URL, server.url));

    const tsc = join(ROOT, "e2e", "node_modules", "typescript", "bin", "tsc");
    const flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--types", "node"];
    await runOk(process.execPath, [tsc, ...flags, file], { cwd: project });

    expect(await runOk(process.execPath, [file], { cwd: project, env: cleanEnv({ PLANTSTORE_TOKEN: TOKEN }) })).toBe("Fern\n");
    const refused = await run(process.execPath, [file], { cwd: project, env: cleanEnv({ PLANTSTORE_TOKEN: "not-a-token" }) });
    expect(refused).toMatchObject({ code: 0, stderr: "401 40101 the bearer token is not valid\n" });
  });

  it("the CLI lines print what their comments say, with a token issued as the README shows", { timeout: 60_000 }, async () => {
    const [block] = codeBlocks(section("The CLI (`@plantstore/cli`, command `plantstore`)"), "sh");
    // `plantstore` as an installed bin would be, and the token from `tokens create` (its README section).
    const bin = join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "plantstore"), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, "apps/cli/dist/bin.js")}" "$@"\n`);
    chmodSync(join(bin, "plantstore"), 0o755);
    const serverBin = join(ROOT, "packages/server/dist/bin.js");
    const issued = await runOk(process.execPath, [serverBin, "tokens", "create", "--name", "ci-importer", "--scopes", "plants:read,plants:write"], {
      cwd: dir,
      env: cleanEnv({ DATABASE_URL: server.databaseUrl }),
    });
    const env = { PATH: `${bin}:${process.env["PATH"] ?? ""}`, PLANTSTORE_URL: server.url, PLANTSTORE_TOKEN: issued.trim() };
    // Ids are each run's own: 16 hex digits stand for any.
    const anyId = (text: string) => text.replaceAll(/\b[0-9a-f]{16}\b/g, "<id>");

    const commands = block!.split("\n").filter((line) => line.startsWith("plantstore "));
    expect(commands.length).toBeGreaterThanOrEqual(5);
    for (const line of commands) {
      const [command, comment] = line.split(/\s+# /) as [string, string | undefined];
      const stdout = await bash(command, env);
      if (comment === undefined) continue;
      // A comment shows the first line printed; after three spaces or " / " it explains the rest.
      const [shown] = comment.split(/ {3}| \/ /) as [string];
      expect(anyId(stdout.split("\n")[0]!), line).toBe(anyId(shown));
    }
  });
});

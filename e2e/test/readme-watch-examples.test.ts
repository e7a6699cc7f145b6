import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { createPlantStoreClient } from "@plantstore/client";
import { checkedFetch } from "@plantstore/test-support/checked-fetch";
import { eventually } from "@plantstore/test-support/eventually";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { beforeAll, describe, expect, it } from "vitest";

import { codeBlocks, EXAMPLE_URL, readme, section, useStore } from "./readme-support.ts";
import { cleanEnv, ROOT, runOk } from "./workspace.ts";

/**
 * The READMEs' watch examples never end by themselves, so they cannot run as readme-examples.test.ts
 * runs the others: each runs as a process, is read while it prints, and is stopped with SIGINT, as
 * a reader would stop it, which must end it with exit code 0.
 */

type Watching = {
  child: ChildProcess;
  lines(): string[];
  stderr(): string;
  closed: Promise<{ code: number | null; stderr: string }>;
};

function watch(command: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Watching {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const closed = once(child, "close").then(([code]) => ({ code: code as number | null, stderr }));
  return { child, lines: () => stdout.split("\n").slice(0, -1), stderr: () => stderr, closed };
}

/** Positions and ids are each run's own: any run of digits stands for any number. */
const anyNumber = (text: string) => text.replaceAll(/\d+/g, "<n>");

describe("packages/client/README.md: watchPlants", () => {
  const store = useStore();
  const project = join(store.dir, "watch-example");
  const [snippet] = codeBlocks(
    section(readme("packages/client/README.md"), "`client.watchPlants({ after, tag, signal, … }?)`"),
    "ts",
  );
  // It continues the README's first snippet: `store` is its client.
  const setup = `import { createPlantStoreClient } from "@plantstore/client";\nconst store = createPlantStoreClient({ baseUrl: ${JSON.stringify(EXAMPLE_URL)}, token: ${JSON.stringify(TOKEN)} });\n`;

  beforeAll(async () => {
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
    symlinkSync(join(ROOT, "e2e", "node_modules"), join(project, "node_modules"), "dir");
    writeFileSync(join(project, "watching.ts"), (setup + snippet!).replaceAll(EXAMPLE_URL, store.server.url));
    const tsc = join(ROOT, "e2e", "node_modules", "typescript", "bin", "tsc");
    const flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext"];
    await runOk(process.execPath, [tsc, ...flags, "--target", "es2022", "--types", "node", "watching.ts"], {
      cwd: project,
    });
  }, 120_000);

  it("type-checks, prints each change as its comment shows, and ends on SIGINT with exit 0", async () => {
    const shown = /\/\/ (plant\.created .*)$/m.exec(snippet!)?.[1];
    expect(shown).toBeDefined();
    const running = watch(process.execPath, ["watching.ts"], { cwd: project, env: cleanEnv() });
    const client = createPlantStoreClient({ baseUrl: store.server.url, token: TOKEN, fetch: checkedFetch });
    // The example starts with the changes after it connected, which nothing outside it can see: write until one shows.
    let id = 20n;
    const [line] = await eventually(
      async () => {
        await client.createPlant({ id: id++, name: "Fern", tag: "fern" });
        return running.lines().length > 0 && running.lines();
      },
      { what: () => `a line from the example (stderr: ${running.stderr()})` },
    );
    expect(anyNumber(line!)).toBe(anyNumber(shown!));
    running.child.kill("SIGINT");
    await expect(running.closed).resolves.toEqual({ code: 0, stderr: "" });
  });
});

describe("apps/cli/README.md: plants watch", () => {
  const store = useStore();
  const [block] = codeBlocks(section(readme("apps/cli/README.md"), "`plantstore plants watch`"), "sh");

  it("each line prints what its comment shows, then ends on SIGINT with exit 0", { timeout: 60_000 }, async () => {
    const client = createPlantStoreClient({ baseUrl: store.server.url, token: TOKEN, fetch: checkedFetch });
    // What the comments show happened on a store of its own: Sage created (position 1), then deleted (2).
    await client.createPlant({ id: 53n, name: "Sage", tag: "herb" });
    await client.deletePlant(53n);
    const commands = block!.split("\n").filter((line) => line.startsWith("plantstore "));
    expect(commands).toHaveLength(2);
    for (const line of commands) {
      const [command, comment] = line.split(/\s+# /) as [string, string];
      const expected = comment.split(" / ");
      const running = watch(process.execPath, [join(ROOT, "apps/cli/dist/bin.js"), ...command.split(/\s+/).slice(1)], {
        cwd: store.dir,
        env: cleanEnv({ PLANTSTORE_URL: store.server.url, PLANTSTORE_TOKEN: TOKEN }),
      });
      await eventually(() => running.lines().length >= expected.length, {
        what: () => `${expected.length} lines from \`${command}\` (so far: ${running.lines().join(" / ")})`,
      });
      running.child.kill("SIGINT");
      await expect(running.closed, line).resolves.toEqual({ code: 0, stderr: "" });
      expect(running.lines(), line).toEqual(expected);
    }
  });
});

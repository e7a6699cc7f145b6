import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { createPlantStoreClient, PlantStoreError } from "@plantstore/client";
import type { RunningServer } from "@plantstore/server";
import { checkedFetch } from "@plantstore/test-support/checked-fetch";
import type { RealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { beforeAll, describe, expect, it } from "vitest";

import {
  anyIdOrTime,
  bash,
  codeBlocks,
  commandsAndOutput,
  EXAMPLE_URL,
  installBin,
  printedLines,
  readme,
  section,
  ShownETags,
  useStore,
} from "./readme-support.ts";
import { cleanEnv, ROOT, run, runOk } from "./workspace.ts";

/**
 * The READMEs' examples, run as a reader would paste them: the curl lines through bash, the client
 * snippets type-checked and run with Node, the CLI lines through a `plantstore` on PATH. What each
 * example says it prints (its `# …` or `// …` comments) is what it must print, so the pages a user
 * reads cannot drift from what the software does. Each README gets a store of its own, so its
 * examples start from what its reader would have.
 */

/** The root README's one request, run on a store first, as a reader who started there would have. */
async function runRootExample(store: { dir: string; server: RealServer<RunningServer> }): Promise<void> {
  const [createBlock] = codeBlocks(section(readme("README.md"), "One request"), "sh");
  await bash(createBlock!, { dir: store.dir, url: store.server.url, env: { PLANTSTORE_TOKEN: TOKEN } });
}

describe("README.md: one request", () => {
  const store = useStore();

  it("curl: creating a plant prints what the README shows", async () => {
    const [createBlock] = codeBlocks(section(readme("README.md"), "One request"), "sh");
    expect(createBlock).toContain("curl");
    const stdout = await bash(createBlock!, {
      dir: store.dir,
      url: store.server.url,
      env: { PLANTSTORE_TOKEN: TOKEN },
    });
    expect(stdout.trim()).toBe(printedLines(createBlock!).join("\n"));
  });
});

describe("packages/server/README.md", () => {
  const store = useStore();
  const markdown = readme("packages/server/README.md");

  it("curl: the listing makes its own plants, shows the README's page and Link, and the delete it shows deletes", async () => {
    const [listBlock] = codeBlocks(section(markdown, "Listing and deleting"), "sh");
    expect(listBlock).toContain("DELETE");
    // Nothing is seeded: the example creates what it lists, and what the root README created
    // before it (a reader's order) does not show up in its page.
    await runRootExample(store);
    const lines = (
      await bash(listBlock!, { dir: store.dir, url: store.server.url, env: { PLANTSTORE_TOKEN: TOKEN } })
    ).split(/\r?\n/);
    for (const expected of printedLines(listBlock!)) expect(lines).toContain(expected);
    // The example's DELETE took plant 31 away: deleting it again is a 404.
    const client = createPlantStoreClient({ baseUrl: store.server.url, token: TOKEN, fetch: checkedFetch });
    await expect(client.deletePlant(31n)).rejects.toSatisfy(
      (error) => error instanceof PlantStoreError && error.status === 404,
    );
  });

  it("curl: one plant read, refused without If-Match, patched, replaced and deleted under its ETags, as shown", async () => {
    const [block] = codeBlocks(section(markdown, "One plant: reading, changing, replacing"), "sh");
    expect(block).toContain("If-Match");
    // Line by line, as a reader who copies each ETag from the answer where the README shows it.
    const tags = new ShownETags();
    const steps = commandsAndOutput(block!);
    expect(steps.filter(({ command }) => command.endsWith("\\"))).toEqual([]);
    for (const { command, shown } of steps) {
      const env = { PLANTSTORE_TOKEN: TOKEN };
      const lines = (await bash(tags.inRun(command), { dir: store.dir, url: store.server.url, env })).split(/\r?\n/);
      // In the order shown: each status, header and body where the README puts it.
      let position = -1;
      for (const expected of shown) {
        position = lines.findIndex((line, index) => index > position && tags.match(expected, line) === line);
        expect(position, `${command}\nprinted:\n${lines.join("\n")}\nnot: ${expected}`).toBeGreaterThanOrEqual(0);
      }
    }
    // The last DELETE took plant 41 away; 42, created by the PUT, is there.
    const client = createPlantStoreClient({ baseUrl: store.server.url, token: TOKEN, fetch: checkedFetch });
    await expect(client.deletePlant(41n)).rejects.toSatisfy(
      (error) => error instanceof PlantStoreError && error.status === 404,
    );
    await client.deletePlant(42n);
  });

  it("the webhook subscriber commands run as shown, on the server's database", { timeout: 60_000 }, async () => {
    const [block] = codeBlocks(section(markdown, "Webhook subscribers"), "sh");
    const bin = installBin(store.dir, "plantstore-server", "packages/server/dist/bin.js");
    const env = { PATH: `${bin}:${process.env["PATH"] ?? ""}`, DATABASE_URL: store.databaseUrl };
    const commands = block!.split("\n").filter((line) => line.startsWith("plantstore-server "));
    expect(commands.map((line) => line.split(/\s+/)[2])).toEqual([
      "add",
      "add",
      "list",
      "deliveries",
      "replay",
      "remove",
    ]);

    // `add` prints the subscriber's id and the secret; the later lines name them as placeholders.
    const added = await bash(commands[0]!, { dir: store.dir, url: store.server.url, env });
    const subscriber = /^added (whk_\S+) /.exec(added)?.[1];
    expect(added).toMatch(/^secret: whsec_\S+$/m);
    expect(subscriber).toBeDefined();
    // The second chooses its event types, and `list` shows each subscriber's.
    const chosen = await bash(commands[1]!, { dir: store.dir, url: store.server.url, env });
    expect(chosen).toMatch(/^added whk_\S+ \S+ \(plant\.created,plant\.updated,plant\.deleted\)$/m);
    const listed = await bash(commands[2]!, { dir: store.dir, url: store.server.url, env });
    expect(listed).toContain(subscriber);
    expect(listed).toContain("plant.created,plant.updated,plant.deleted");
    // A new plant makes a delivery (to a receiver that does not exist) for `deliveries` and `replay` to show.
    await createPlantStoreClient({ baseUrl: store.server.url, token: TOKEN, fetch: checkedFetch }).createPlant({
      id: 100n,
      name: "Ivy",
    });
    await bash(commands[3]!, { dir: store.dir, url: store.server.url, env });
    const [delivery] = JSON.parse(
      await bash("plantstore-server webhooks deliveries --json", { dir: store.dir, url: store.server.url, env }),
    ) as { id: number }[];
    expect(delivery).toBeDefined();
    const replayed = await bash(commands[4]!.replace(/ 42\b/, ` ${delivery!.id}`), {
      dir: store.dir,
      url: store.server.url,
      env,
    });
    expect(replayed.trim()).toBe(`delivery ${delivery!.id} queued again`);
    const removed = await bash(commands[5]!.replace(/whk_…/, subscriber!), {
      dir: store.dir,
      url: store.server.url,
      env,
    });
    expect(removed.trim()).toBe(`removed ${subscriber}`);
  });
});

/** What a snippet says it prints: the comment after each `console.log(…);`, in order. */
const shownByConsoleLog = (snippet: string) =>
  [...snippet.matchAll(/console\.log\(.*\); \/\/ (.*)$/gm)].map((match) => match[1]!);

describe("packages/client/README.md", () => {
  const store = useStore();
  const markdown = readme("packages/client/README.md");
  // The ETags the snippets print are the store's own: the README's stand for them (see ShownETags).
  const tags = new ShownETags();
  const project = join(store.dir, "client-examples");

  const [first] = codeBlocks(markdown, "ts");
  const errors = codeBlocks(section(markdown, "Errors"), "ts").find((block) =>
    block.includes("PlantStoreRateLimitError"),
  );
  const [paging] = codeBlocks(section(markdown, "`client.listPlants({ limit, after, tag }?, { signal }?)`"), "ts");
  const [iterating] = codeBlocks(
    section(markdown, "`client.iteratePlants({ limit, after, tag }?, { signal }?)`"),
    "ts",
  );
  const [reading, updating, replacing, deleting] = [
    "`client.getPlant(id, { ifNoneMatch, signal }?)`",
    "`client.updatePlant(id, patch, { ifMatch, signal })`",
    '`client.replacePlant(id, plant, { ifMatch } | { ifNoneMatch: "*" })`',
    "`client.deletePlant(id, { ifMatch, signal }?)`",
  ].map((title) => codeBlocks(section(markdown, title), "ts")[0]);
  // The first watch snippet runs until Ctrl-C; the second stops once the stream is live.
  const [, watching] = codeBlocks(section(markdown, "`client.watchPlants({ after, tag, signal, … }?)`"), "ts");
  // The later snippets continue the first one: `store` is its client.
  const setup = `import { createPlantStoreClient } from "@plantstore/client";\nconst store = createPlantStoreClient({ baseUrl: ${JSON.stringify(EXAMPLE_URL)}, token: ${JSON.stringify(TOKEN)} });\n`;

  // A project of the reader's: ESM, with the workspace's installed packages; every snippet type-checked there at once.
  beforeAll(async () => {
    const files: Record<string, string> = {
      "first.ts": first!
        .replaceAll("https://plants.example.com", EXAMPLE_URL)
        .replaceAll('"my-token"', JSON.stringify(TOKEN)),
      "errors.ts": errors!,
      // Pages of 2, so the loop follows `next` more than once.
      "paging.ts": setup + paging!.replace("limit: 50", "limit: 2"),
      "iterating.ts": setup + iterating!,
      "reading.ts": setup + reading!,
      "updating.ts": setup + updating!,
      "replacing.ts": setup + replacing!,
      "deleting.ts": setup + deleting!,
      "watching.ts": setup + watching!,
    };
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
    symlinkSync(join(ROOT, "e2e", "node_modules"), join(project, "node_modules"), "dir");
    for (const [file, text] of Object.entries(files))
      writeFileSync(join(project, file), text.replaceAll(EXAMPLE_URL, store.server.url));
    const tsc = join(ROOT, "e2e", "node_modules", "typescript", "bin", "tsc");
    const flags = [
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--types",
      "node",
    ];
    await runOk(process.execPath, [tsc, ...flags, ...Object.keys(files)], { cwd: project });
  }, 120_000);

  it("has the snippets this test runs", () => {
    expect(first).toContain("createPlantStoreClient");
    expect(errors).toBeDefined();
    expect(paging).toContain("page.next");
    expect(iterating).toContain("iteratePlants");
    expect(reading).toContain("ifNoneMatch");
    expect(updating).toContain("PlantStorePreconditionFailedError");
    expect(replacing).toContain('ifNoneMatch: "*"');
    expect(deleting).toContain("ifMatch");
    expect(watching).toContain("onOpen");
  });

  it("the first snippet type-checks, runs, and prints what its comment says", async () => {
    const shown = /console\.log\(plant\); \/\/ (.*)$/m.exec(first!)?.[1];
    expect(shown).toBeDefined();
    // Node prints strings with single quotes where the comment writes JSON-like double ones.
    const stdout = await runOk(process.execPath, ["first.ts"], { cwd: project, env: cleanEnv() });
    expect(stdout.trim().replaceAll("'", '"')).toBe(shown);
  });

  it("the errors snippet type-checks, runs, and reports errors with the fields it names", async () => {
    expect(
      await runOk(process.execPath, ["errors.ts"], { cwd: project, env: cleanEnv({ PLANTSTORE_TOKEN: TOKEN }) }),
    ).toBe("Fern\n");
    const refused = await run(process.execPath, ["errors.ts"], {
      cwd: project,
      env: cleanEnv({ PLANTSTORE_TOKEN: "not-a-token" }),
    });
    expect(refused).toMatchObject({ code: 0, stderr: "401 40101 the bearer token is not valid\n" });
  });

  it("the revision snippets read, patch, replace and delete, printing what their comments say", async () => {
    const client = createPlantStoreClient({ baseUrl: store.server.url, token: TOKEN, fetch: checkedFetch });
    const snippets = {
      "reading.ts": reading!,
      "updating.ts": updating!,
      "replacing.ts": replacing!,
      "deleting.ts": deleting!,
    };
    for (const [file, snippet] of Object.entries(snippets)) {
      const stdout = await runOk(process.execPath, [file], { cwd: project, env: cleanEnv() });
      // Node prints strings with single quotes where the comments write JSON-like double ones.
      const lines = stdout
        .replaceAll("'", '"')
        .split("\n")
        .filter((line) => line !== "");
      const shown = shownByConsoleLog(snippet);
      expect(lines, file).toEqual(shown.map((line, index) => tags.match(line, lines[index] ?? "")));
    }
    // The snippets' effects, read back: the patch removed the tag, the replacement added one, the deletion deleted.
    await expect(client.getPlant(13n)).resolves.toMatchObject({ plant: { id: 13n, name: "Sweet basil" } });
    await expect(client.getPlant(14n)).resolves.toMatchObject({
      plant: { id: 14n, name: "Aloe vera", tag: "succulent" },
    });
    await expect(client.getPlant(15n)).rejects.toSatisfy(
      (error) => error instanceof PlantStoreError && error.status === 404,
    );
  });

  it("the onOpen snippet hears its stream open, fresh, and prints what its comment says", async () => {
    const stdout = await runOk(process.execPath, ["watching.ts"], { cwd: project, env: cleanEnv() });
    expect(stdout.trim().split("\n")).toEqual(shownByConsoleLog(watching!));
  });

  it("the paging snippets walk every fern, page by page and as one iteration", async () => {
    const client = createPlantStoreClient({ baseUrl: store.server.url, token: TOKEN, fetch: checkedFetch });
    for (const id of [20n, 21n, 22n]) await client.createPlant({ id, name: `Fern ${id}`, tag: "fern" });
    await client.createPlant({ id: 23n, name: "Moss", tag: "moss" });
    const ferns = (await client.listPlants({ tag: "fern", limit: 1000 })).plants.map(
      (plant) => `${plant.id}n ${plant.name}`,
    );
    expect(ferns.length).toBeGreaterThanOrEqual(3);
    for (const file of ["paging.ts", "iterating.ts"]) {
      const stdout = await runOk(process.execPath, [file], { cwd: project, env: cleanEnv() });
      expect(stdout.trim().split("\n"), file).toEqual(ferns);
    }
  });
});

describe("apps/cli/README.md", () => {
  const store = useStore();
  const markdown = readme("apps/cli/README.md");

  /** `plantstore` on PATH, with a token issued by `tokens create` as the server's README shows. */
  async function cliEnv(): Promise<Record<string, string>> {
    const bin = installBin(store.dir, "plantstore", "apps/cli/dist/bin.js");
    const serverBin = join(ROOT, "packages/server/dist/bin.js");
    const args = [
      "tokens",
      "create",
      "--name",
      "ci-importer",
      "--scopes",
      "plants:read,plants:write",
      "--expires-in",
      "30d",
    ];
    const issued = await runOk(process.execPath, [serverBin, ...args], {
      cwd: store.dir,
      env: cleanEnv({ DATABASE_URL: store.databaseUrl }),
    });
    return {
      PATH: `${bin}:${process.env["PATH"] ?? ""}`,
      PLANTSTORE_URL: store.server.url,
      PLANTSTORE_TOKEN: issued.trim(),
    };
  }

  it(
    "the CLI lines print what their comments say, and whoami what its section shows",
    { timeout: 60_000 },
    async () => {
      const env = await cliEnv();
      // A reader who ran the root README's example first: its plant must not show up here.
      await runRootExample(store);
      const [block] = codeBlocks(markdown, "sh");
      const commands = block!.split("\n").filter((line) => line.startsWith("plantstore "));
      expect(commands.length).toBeGreaterThanOrEqual(5);
      // The ETags printed are the store's own: the README's stand for them, as a reader copies them.
      const tags = new ShownETags();
      for (const line of commands) {
        const [command, comment] = line.split(/\s+# /) as [string, string | undefined];
        const stdout = await bash(tags.inRun(command), { dir: store.dir, url: store.server.url, env });
        if (comment === undefined) continue;
        // A comment shows every line printed, separated by " / ".
        const shown = tags.match(comment.split(" / ").join("\n"), stdout.trimEnd());
        expect(anyIdOrTime(stdout.trimEnd()), line).toBe(anyIdOrTime(shown));
      }

      const [whoami] = codeBlocks(section(markdown, "`plantstore whoami`"), "");
      expect(whoami).toBeDefined();
      const stdout = await bash("plantstore whoami", { dir: store.dir, url: store.server.url, env });
      expect(anyIdOrTime(stdout)).toBe(anyIdOrTime(whoami!));

      // The block updated plant 52 twice: its revision from before, as the update section sends it, is stale.
      const updateSection = section(markdown, "`plantstore plants update <id>`");
      const [stale] = codeBlocks(updateSection, "sh");
      const [refusal] = codeBlocks(updateSection, "text");
      expect(stale).toContain("--if-match");
      const refused = await run("bash", ["-c", tags.inRun(stale!)], { cwd: store.dir, env: cleanEnv(env) });
      expect(refused).toMatchObject({ code: 1, stdout: "", stderr: tags.inRun(refusal!) });
    },
  );
});

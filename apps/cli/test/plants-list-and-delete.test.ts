import { INT64_MAX, INT64_MIN, type NewPlant, stringifyJsonLossless } from "@plantstore/schema";
import type { RunningServer } from "@plantstore/server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { closedUrl, runCli, startCheckedServer } from "./run-cli.ts";

let server: RunningServer;
let auth: string[];
beforeAll(async () => {
  server = await startCheckedServer();
  auth = ["--url", server.url, "--token", TOKEN];
});
afterAll(async () => {
  await server.close();
});

/** Seeds plants straight into the store: the CLI under test only reads and deletes them. */
async function seed(plants: readonly NewPlant[], into: RunningServer = server): Promise<void> {
  await Promise.all(plants.map(async (plant) => expect(await into.store.create(plant)).not.toBe("conflict")));
}

const tagged = (tag: string, ids: readonly bigint[]): NewPlant[] => ids.map((id) => ({ id, name: `p${id}`, tag }));
const linesFor = (plants: readonly NewPlant[]) =>
  plants.map((p) => `${p.id}: ${p.name}${p.tag === undefined ? "" : ` (${p.tag})`}\n`).join("");

describe("plantstore plants list, on success", () => {
  const edges = tagged("edge", [INT64_MIN, INT64_MIN + 1n, 2n ** 53n + 1n, INT64_MAX - 1n, INT64_MAX]);
  beforeAll(async () => {
    await seed(edges);
  });

  it("prints one line per plant, ordered by id, and exits 0", async () => {
    const result = await runCli(["plants", "list", "--tag", "edge", ...auth]);
    expect(result).toEqual({ code: 0, stdout: linesFor(edges), stderr: "" });
    expect(result.stdout.split("\n")[0]).toBe("-9223372036854775808: p-9223372036854775808 (edge)");
  });

  it("prints a JSON array with exact int64 ids with --json", async () => {
    const result = await runCli(["plants", "list", "--tag", "edge", "--json", ...auth]);
    expect(result).toEqual({ code: 0, stdout: `${stringifyJsonLossless(edges)}\n`, stderr: "" });
    expect(result.stdout).toContain('{"id":9223372036854775807,"name":"p9223372036854775807","tag":"edge"}');
  });

  it("leaves out the tag of a plant without one", async () => {
    await seed([{ id: 50n, name: "Bare" }]);
    await expect(runCli(["plants", "list", "--after", "49", "--limit", "1", "--json", ...auth])).resolves.toMatchObject(
      {
        code: 0,
        stdout: '[{"id":50,"name":"Bare"}]\n',
      },
    );
    await expect(runCli(["plants", "list", "--after", "49", "--limit", "1", ...auth])).resolves.toMatchObject({
      code: 0,
      stdout: "50: Bare\n",
    });
  });

  it("prints one page with --limit, and says on stderr where the next one starts", async () => {
    const first = await runCli(["plants", "list", "--tag", "edge", "--limit", "2", ...auth]);
    expect(first).toEqual({
      code: 0,
      stdout: linesFor(edges.slice(0, 2)),
      stderr:
        "plantstore: more plants follow; continue with --after -9223372036854775807, or list them all with --all\n",
    });
    const second = await runCli([
      "plants",
      "list",
      "--tag",
      "edge",
      "--limit",
      "2",
      "--after=-9223372036854775807",
      ...auth,
    ]);
    expect(second.stdout).toBe(linesFor(edges.slice(2, 4)));
    const last = await runCli([
      "plants",
      "list",
      "--tag",
      "edge",
      "--limit",
      "2",
      "--after",
      String(INT64_MAX - 1n),
      ...auth,
    ]);
    expect(last).toEqual({ code: 0, stdout: linesFor(edges.slice(4)), stderr: "" });
  });

  it("walks every page with --all, printing each plant once", async () => {
    const many = tagged(
      "many",
      Array.from({ length: 57 }, (_, i) => 10_000n + BigInt(i) * 7n),
    );
    await seed(many);
    const lines = await runCli(["plants", "list", "--tag", "many", "--limit", "5", "--all", ...auth]);
    expect(lines).toEqual({ code: 0, stdout: linesFor(many), stderr: "" });
    const json = await runCli(["plants", "list", "--tag", "many", "--limit", "4", "--all", "--json", ...auth]);
    expect(json).toEqual({ code: 0, stdout: `${stringifyJsonLossless(many)}\n`, stderr: "" });
  });

  it("starts --all after --after", async () => {
    const result = await runCli([
      "plants",
      "list",
      "--tag",
      "edge",
      "--after",
      String(2n ** 53n + 1n),
      "--limit",
      "1",
      "--all",
      "--json",
      ...auth,
    ]);
    expect(result).toEqual({ code: 0, stdout: `${stringifyJsonLossless(edges.slice(3))}\n`, stderr: "" });
  });

  it("filters by exact tag", async () => {
    await seed([...tagged("a b&c", [60n, 61n]), ...tagged("a b", [62n])]);
    const result = await runCli(["plants", "list", "--tag", "a b&c", "--limit", "1", "--all", ...auth]);
    expect(result).toEqual({ code: 0, stdout: "60: p60 (a b&c)\n61: p61 (a b&c)\n", stderr: "" });
  });

  it("says so when nothing matches", async () => {
    await expect(runCli(["plants", "list", "--tag", "none-such", ...auth])).resolves.toEqual({
      code: 0,
      stdout: "no plants\n",
      stderr: "",
    });
    await expect(runCli(["plants", "list", "--tag", "none-such", "--all", "--json", ...auth])).resolves.toEqual({
      code: 0,
      stdout: "[]\n",
      stderr: "",
    });
  });

  it("escapes control characters in lines, and keeps the exact text in --json", async () => {
    const sly = { id: 70n, name: "Fern\n71: Fake\u001b[2J", tag: "\u202eevil" };
    await seed([sly]);
    const lines = await runCli(["plants", "list", "--after", "69", "--limit", "1", ...auth]);
    expect(lines.stdout).toBe("70: Fern\\u000a71: Fake\\u001b[2J (\\u202eevil)\n");
    const json = await runCli(["plants", "list", "--after", "69", "--limit", "1", "--json", ...auth]);
    expect(json.stdout).toBe(`${stringifyJsonLossless([sly])}\n`);
  });

  it("escapes isolates and invisible format characters in lines too, so look-alike names read apart", async () => {
    const hidden = { id: 72n, name: "Fe\u200brn\u2066", tag: "\u2068herb\u2069\u00ad" };
    await seed([hidden]);
    const lines = await runCli(["plants", "list", "--after", "71", "--limit", "1", ...auth]);
    expect(lines.stdout).toBe("72: Fe\\u200brn\\u2066 (\\u2068herb\\u2069\\u00ad)\n");
  });

  it("uses PLANTSTORE_URL and PLANTSTORE_TOKEN when no flags are given", async () => {
    const result = await runCli(["plants", "list", "--tag", "edge", "--limit", "1", "--json"], {
      PLANTSTORE_URL: server.url,
      PLANTSTORE_TOKEN: TOKEN,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('[{"id":-9223372036854775808,"name":"p-9223372036854775808","tag":"edge"}]\n');
  });
});

describe("plantstore plants list, when the service refuses", () => {
  it("exits 1 on an unknown token", async () => {
    const result = await runCli(["plants", "list", "--url", server.url, "--token", "nope"]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: "plantstore: the bearer token is not valid (error 40101 INVALID_TOKEN, HTTP 401)\n",
    });
  });

  it("exits 1 when nothing answers", async () => {
    const gone = { url: await closedUrl() };
    const result = await runCli(["plants", "list", "--all", "--url", gone.url, "--token", TOKEN]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^plantstore: no response from /);
  });
});

describe("plantstore plants list, on bad usage", () => {
  it.each([
    ["--limit 0", ["--limit", "0"], /argument '0' is invalid\. Must be an integer from 1 to 1000/],
    ["--limit 1001", ["--limit", "1001"], /argument '1001' is invalid/],
    ["--limit 1.5", ["--limit", "1.5"], /argument '1\.5' is invalid/],
    ["--limit abc", ["--limit", "abc"], /argument 'abc' is invalid/],
    ["--after 2^63", ["--after", "9223372036854775808"], /int64/],
    ["--after 1e3", ["--after", "1e3"], /argument '1e3' is invalid/],
    ["an empty --tag", ["--tag", ""], /tag must not be empty/],
    ["an extra argument", ["extra"], /too many arguments/],
    ["an unknown option", ["--colour", "green"], /unknown option '--colour'/],
  ])("exits 2 on %s, printing why", async (_label, args, message) => {
    const result = await runCli(["plants", "list", ...args, ...auth]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(message);
  });

  it("exits 2 without a URL from flag or environment", async () => {
    const result = await runCli(["plants", "list", "--token", TOKEN]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no service URL: pass --url or set PLANTSTORE_URL/);
  });
});

describe("plantstore plants delete", () => {
  it("deletes a plant, says so and exits 0; a second time exits 1 with 404 / 40401", async () => {
    await seed([{ id: 80n, name: "Doomed" }]);
    await expect(runCli(["plants", "delete", "80", ...auth])).resolves.toEqual({
      code: 0,
      stdout: "deleted plant 80\n",
      stderr: "",
    });
    await expect(server.store.get(80n)).resolves.toBeUndefined();
    await expect(runCli(["plants", "delete", "80", ...auth])).resolves.toEqual({
      code: 1,
      stdout: "",
      stderr: "plantstore: no plant with id 80 is stored (error 40401 PLANT_NOT_FOUND, HTTP 404)\n",
    });
  });

  // The ids near ±2^63 are taken by the listing tests above: these use a store of their own, so
  // they run side by side (each mostly waits for its server to start and its CLI processes).
  it.concurrent("prints JSON with exact ids with --json", async ({ expect }) => {
    await using fresh = await startCheckedServer();
    await seed([{ id: INT64_MAX, name: "Top" }], fresh);
    await expect(
      runCli(["plants", "delete", String(INT64_MAX), "--json", "--url", fresh.url, "--token", TOKEN]),
    ).resolves.toEqual({
      code: 0,
      stdout: '{"id":9223372036854775807,"deleted":true}\n',
      stderr: "",
    });
  });

  it.concurrent.for([
    ["-2^63", INT64_MIN, INT64_MIN + 1n],
    ["2^63 - 1", INT64_MAX, INT64_MAX - 1n],
    ["2^53 + 1", 2n ** 53n + 1n, 2n ** 53n],
  ] as const)("deletes id %s exactly, not its neighbour", async ([, id, neighbour], { expect }) => {
    await using fresh = await startCheckedServer();
    const freshAuth = ["--url", fresh.url, "--token", TOKEN];
    await seed(
      [
        { id, name: "target" },
        { id: neighbour, name: "neighbour" },
      ],
      fresh,
    );
    const result = await runCli(["plants", "delete", String(id), ...freshAuth]);
    expect(result).toEqual({ code: 0, stdout: `deleted plant ${id}\n`, stderr: "" });
    // Read below the HTTP layer: a rounded id would have deleted (or missed) a neighbour.
    await expect(fresh.store.get(id)).resolves.toBeUndefined();
    await expect(fresh.store.get(neighbour)).resolves.toMatchObject({ name: "neighbour" });
    await expect(runCli(["plants", "list", "--json", ...freshAuth])).resolves.toMatchObject({
      stdout: `[{"id":${neighbour},"name":"neighbour"}]\n`,
    });
  });

  it("frees the id: the same id is created again with another name", async () => {
    await expect(runCli(["plants", "create", "--id", "90", "--name", "Before", ...auth])).resolves.toMatchObject({
      code: 0,
    });
    await expect(runCli(["plants", "delete", "90", ...auth])).resolves.toMatchObject({ code: 0 });
    await expect(
      runCli(["plants", "create", "--id", "90", "--name", "After", "--tag", "new", ...auth]),
    ).resolves.toEqual({
      code: 0,
      stdout: "created plant 90: After (new)\n",
      stderr: "",
    });
    await expect(runCli(["plants", "list", "--after", "89", "--limit", "1", ...auth])).resolves.toMatchObject({
      stdout: "90: After (new)\n",
    });
  });

  it("exits 1 on an unknown token, deleting nothing", async () => {
    await seed([{ id: 91n, name: "Kept" }]);
    const result = await runCli(["plants", "delete", "91", "--url", server.url, "--token", "nope"]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: "plantstore: the bearer token is not valid (error 40101 INVALID_TOKEN, HTTP 401)\n",
    });
    await expect(server.store.get(91n)).resolves.toMatchObject({ name: "Kept" });
  });

  it.each([["1.5"], ["abc"], ["1e3"], ["0x10"], ["9223372036854775808"], ["-9223372036854775809"], [" 7"], [""]])(
    "exits 2 on the id %j, sending nothing",
    async (id) => {
      await seed([
        { id: 1000n, name: "Safe" },
        { id: 16n, name: "Safe" },
        { id: 7n, name: "Safe" },
      ]);
      const result = await runCli(["plants", "delete", id, ...auth]);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(/invalid for argument 'id'/);
      for (const kept of [1000n, 16n, 7n])
        await expect(server.store.get(kept)).resolves.toMatchObject({ name: "Safe" });
    },
  );

  it.each([
    ["no id", [], /missing required argument 'id'/],
    ["two ids", ["1", "2"], /too many arguments/],
  ])("exits 2 on %s", async (_label, args, message) => {
    const result = await runCli(["plants", "delete", ...args, ...auth]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});

describe("plantstore plants list/delete --help", () => {
  it.each([
    [["plants", "list", "--help"], "Usage: plantstore plants list [options]"],
    [["plants", "delete", "--help"], "Usage: plantstore plants delete [options] <id>"],
  ])("%j prints usage on stdout and exits 0", async (args, usage) => {
    const result = await runCli(args);
    expect(result.code).toBe(0);
    expect(result.stdout.startsWith(usage)).toBe(true);
    expect(result.stdout).toMatch(/PLANTSTORE_URL/);
    expect(result.stdout).toMatch(/PLANTSTORE_TOKEN/);
  });

  it("lists every plants command under plantstore plants --help", async () => {
    const { stdout } = await runCli(["plants", "--help"]);
    expect(stdout).toMatch(/^ {2}create /m);
    expect(stdout).toMatch(/^ {2}list /m);
    expect(stdout).toMatch(/^ {2}delete /m);
  });

  it("documents --limit, --after, --tag, --all and --json under plants list", async () => {
    const { stdout } = await runCli(["plants", "list", "--help"]);
    for (const option of ["--limit <n>", "--after <id>", "--tag <tag>", "--all", "--json"])
      expect(stdout).toContain(option);
  });
});

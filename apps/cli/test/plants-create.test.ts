import { readFileSync } from "node:fs";

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

// Nothing but commander's and our own message may be printed, and nothing reaches the store.
async function expectNotSent(id: bigint): Promise<void> {
  await expect(server.store.get(id)).resolves.toBeUndefined();
}

describe("plantstore plants create, on success", () => {
  it("prints a sentence with id, name and tag, and exits 0", async () => {
    const result = await runCli(["plants", "create", "--id", "7", "--name", "Fern", "--tag", "fern", ...auth]);
    expect(result).toEqual({ code: 0, stdout: "created plant 7: Fern (fern)\n", stderr: "" });
  });

  it("leaves out the tag when none was given", async () => {
    const result = await runCli(["plants", "create", "--id", "8", "--name", "Moss", ...auth]);
    expect(result).toEqual({ code: 0, stdout: "created plant 8: Moss\n", stderr: "" });
  });

  it("prints the Plant as JSON with --json", async () => {
    const result = await runCli(["plants", "create", "--id", "9", "--name", "Ivy", "--tag", "vine", "--json", ...auth]);
    expect(result).toEqual({ code: 0, stdout: '{"name":"Ivy","tag":"vine"}\n', stderr: "" });
  });

  it("exits 0 again when the same plant is sent twice", async () => {
    const args = ["plants", "create", "--id", "10", "--name", "Sage", ...auth];
    await expect(runCli(args)).resolves.toMatchObject({ code: 0 });
    await expect(runCli(args)).resolves.toEqual({ code: 0, stdout: "created plant 10: Sage\n", stderr: "" });
  });

  it.each([["9223372036854775807"], ["-9223372036854775808"], ["9007199254740993"]])(
    "keeps id %s exact",
    async (literal) => {
      const result = await runCli(["plants", "create", `--id=${literal}`, "--name", "Big", ...auth]);
      expect(result).toEqual({ code: 0, stdout: `created plant ${literal}: Big\n`, stderr: "" });
      await expect(server.store.get(BigInt(literal))).resolves.toMatchObject({ id: BigInt(literal), name: "Big" });
    },
  );
});

describe("plantstore plants create, configured from the environment", () => {
  it("uses PLANTSTORE_URL and PLANTSTORE_TOKEN when no flags are given", async () => {
    const result = await runCli(["plants", "create", "--id", "20", "--name", "Aloe"], {
      PLANTSTORE_URL: server.url,
      PLANTSTORE_TOKEN: TOKEN,
    });
    expect(result).toEqual({ code: 0, stdout: "created plant 20: Aloe\n", stderr: "" });
  });

  it("lets --url and --token override the environment", async () => {
    const result = await runCli(["plants", "create", "--id", "21", "--name", "Yucca", ...auth], {
      PLANTSTORE_URL: "http://127.0.0.1:1",
      PLANTSTORE_TOKEN: "wrong-token",
    });
    expect(result).toEqual({ code: 0, stdout: "created plant 21: Yucca\n", stderr: "" });
  });

  it("lets --token override a valid PLANTSTORE_TOKEN (proved by the 401)", async () => {
    const result = await runCli(["plants", "create", "--id", "22", "--name", "Palm", "--token", "wrong-token"], {
      PLANTSTORE_URL: server.url,
      PLANTSTORE_TOKEN: TOKEN,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/40101/);
    await expectNotSent(22n);
  });
});

describe("plantstore plants create, when the service refuses", () => {
  it("exits 1 on a conflicting plant, naming message, code and status on stderr", async () => {
    await expect(runCli(["plants", "create", "--id", "30", "--name", "Rose", ...auth])).resolves.toMatchObject({
      code: 0,
    });
    const result = await runCli(["plants", "create", "--id", "30", "--name", "Tulip", ...auth]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      "plantstore: a plant with id 30 is already stored with a different name or tag (error 40900 ID_CONFLICT, HTTP 409)\n",
    );
  });

  it("exits 1 on an unknown token", async () => {
    const result = await runCli([
      "plants",
      "create",
      "--id",
      "31",
      "--name",
      "Lily",
      "--url",
      server.url,
      "--token",
      "nope",
    ]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: "plantstore: the bearer token is not valid (error 40101 INVALID_TOKEN, HTTP 401)\n",
    });
  });

  it("exits 1 when nothing answers", async () => {
    const gone = { url: await closedUrl() };
    const result = await runCli([
      "plants",
      "create",
      "--id",
      "32",
      "--name",
      "Fig",
      "--url",
      gone.url,
      "--token",
      TOKEN,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^plantstore: no response from /);
  });
});

describe("plantstore plants create, on bad usage", () => {
  it.each([
    ["missing --name", ["--id", "40"], /required option '--name <name>' not specified/, 40n],
    ["missing --id", ["--name", "Fern"], /required option '--id <id>' not specified/, undefined],
    ["a fractional id", ["--id", "1.5", "--name", "Fern"], /argument '1\.5' is invalid/, undefined],
    ["a non-numeric id", ["--id", "abc", "--name", "Fern"], /argument 'abc' is invalid/, undefined],
    ["an exponent id", ["--id", "1e3", "--name", "Fern"], /argument '1e3' is invalid/, 1000n],
    ["an id of 2^63", ["--id", "9223372036854775808", "--name", "Fern"], /int64/, undefined],
    ["an id below -2^63", ["--id=-9223372036854775809", "--name", "Fern"], /int64/, undefined],
    ["an empty name", ["--id", "41", "--name", ""], /name must not be empty/, 41n],
    ["an unknown option", ["--id", "42", "--name", "Fern", "--colour", "green"], /unknown option '--colour'/, 42n],
    ["an extra argument", ["--id", "43", "--name", "Fern", "extra"], /too many arguments/, 43n],
  ])("exits 2 on %s, printing why", async (_label, args, message, id) => {
    const result = await runCli(["plants", "create", ...args, ...auth]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(message);
    if (id !== undefined) await expectNotSent(id);
  });

  it("exits 2 without a URL from flag or environment", async () => {
    const result = await runCli(["plants", "create", "--id", "44", "--name", "Fern", "--token", TOKEN]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no service URL: pass --url or set PLANTSTORE_URL/);
  });

  it("exits 2 without a token from flag or environment (an empty variable counts as unset)", async () => {
    const result = await runCli(["plants", "create", "--id", "45", "--name", "Fern", "--url", server.url], {
      PLANTSTORE_TOKEN: "",
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no bearer token: pass --token or set PLANTSTORE_TOKEN/);
    await expectNotSent(45n);
  });

  it("exits 2 on a URL that is not absolute http(s)", async () => {
    const result = await runCli([
      "plants",
      "create",
      "--id",
      "46",
      "--name",
      "Fern",
      "--url",
      "localhost:3000",
      "--token",
      TOKEN,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/baseUrl/);
  });

  it.each([[[]], [["plants"]], [["pots"]]])("exits 2 on an incomplete or unknown command %j", async (args) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).not.toBe("");
  });
});

describe("plantstore --help", () => {
  it.each([
    [["--help"], "Usage: plantstore [options] [command]"],
    [["plants", "--help"], "Usage: plantstore plants [options] [command]"],
    [["plants", "create", "--help"], "Usage: plantstore plants create [options]"],
    [["help", "plants"], "Usage: plantstore plants [options] [command]"],
  ])("%j prints usage on stdout and exits 0", async (args, usage) => {
    const result = await runCli(args);
    expect(result.code).toBe(0);
    expect(result.stdout.startsWith(usage)).toBe(true);
    expect(result.stderr).toBe("");
  });

  it("documents the environment variables under plants create", async () => {
    const { stdout } = await runCli(["plants", "create", "--help"]);
    expect(stdout).toMatch(/PLANTSTORE_URL/);
    expect(stdout).toMatch(/PLANTSTORE_TOKEN/);
  });

  it("--version prints the package version", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    await expect(runCli(["--version"])).resolves.toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });
});

import { INT64_MAX, type NewPlant } from "@plantstore/schema";
import type { RunningServer } from "@plantstore/server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runCli, startCheckedServer } from "./run-cli.ts";

let server: RunningServer;
let auth: string[];
beforeAll(async () => {
  server = await startCheckedServer();
  auth = ["--url", server.url, "--token", TOKEN];
});
afterAll(async () => {
  await server.close();
});

/** Seeds a plant straight into the store: the CLI under test reads and changes it. */
async function seed(plant: NewPlant): Promise<void> {
  expect(await server.store.create(plant)).not.toBe("conflict");
}

/** A strong entity tag as the server makes them: 27 base64url characters in quotes. */
const ETAG = /"[A-Za-z0-9_-]{27}"/;

/** The ETag `plants get` prints for the plant as it is now. */
async function currentETag(id: bigint): Promise<string> {
  const { code, stdout } = await runCli(["plants", "get", String(id), ...auth]);
  expect(code).toBe(0);
  return new RegExp(`^ETag: (${ETAG.source})$`, "m").exec(stdout)![1]!;
}

describe("plantstore plants get", () => {
  it("prints the plant's line and its ETag, and exits 0", async () => {
    await seed({ id: 61n, name: "Fern", tag: "fern" });
    const result = await runCli(["plants", "get", "61", ...auth]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toMatch(new RegExp(`^61: Fern \\(fern\\)\\nETag: ${ETAG.source}\\n$`));
  });

  it("prints the plant with its exact id and the ETag as JSON with --json", async () => {
    await seed({ id: INT64_MAX, name: "Big" });
    const result = await runCli(["plants", "get", String(INT64_MAX), "--json", ...auth]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toMatch(
      new RegExp(`^\\{"plant":\\{"id":${INT64_MAX},"name":"Big"\\},"etag":"\\\\"[A-Za-z0-9_-]{27}\\\\""\\}\\n$`),
    );
    const { etag } = JSON.parse(result.stdout) as { etag: string };
    expect(etag).toBe(await currentETag(INT64_MAX));
  });

  it("exits 1 with 40401 when no plant has the id", async () => {
    const result = await runCli(["plants", "get", "62", ...auth]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/error 40401 PLANT_NOT_FOUND, HTTP 404/);
  });

  it("exits 2 on a malformed id, sending nothing", async () => {
    await expect(runCli(["plants", "get", "6.5", ...auth])).resolves.toMatchObject({ code: 2, stdout: "" });
  });
});

describe("plantstore plants update", () => {
  it("without --if-match reads the current ETag first, says so on stderr, and updates that revision", async () => {
    await seed({ id: 71n, name: "Basil", tag: "herb" });
    const before = await currentETag(71n);
    const result = await runCli(["plants", "update", "71", "--name", "Sweet basil", ...auth]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(`plantstore: no --if-match: read plant 71 first, updating revision ${before} only\n`);
    const after = await currentETag(71n);
    expect(after).not.toBe(before);
    expect(result.stdout).toBe(`updated plant 71: Sweet basil (herb)\nETag: ${after}\n`);
    await expect(server.store.get(71n)).resolves.toEqual({ id: 71n, name: "Sweet basil", tag: "herb" });
  });

  it("with --if-match and --json prints only the JSON on stdout and nothing on stderr", async () => {
    await seed({ id: 72n, name: "Thyme", tag: "herb" });
    const etag = await currentETag(72n);
    const result = await runCli(["plants", "update", "72", "--clear-tag", "--if-match", etag, "--json", ...auth]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(result.stdout)).toEqual({ plant: { id: 72, name: "Thyme" }, etag: await currentETag(72n) });
    await expect(server.store.get(72n)).resolves.toEqual({ id: 72n, name: "Thyme" });
  });

  it("takes an --if-match whose quotes the shell dropped", async () => {
    await seed({ id: 73n, name: "Mint" });
    const etag = await currentETag(73n);
    const result = await runCli(["plants", "update", "73", "--tag", "herb", "--if-match", etag.slice(1, -1), ...auth]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    await expect(server.store.get(73n)).resolves.toEqual({ id: 73n, name: "Mint", tag: "herb" });
  });

  it("exits 1 on a stale --if-match with a message naming the revision sent and the current one, changing nothing", async () => {
    await seed({ id: 74n, name: "Sage" });
    const stale = await currentETag(74n);
    await expect(
      runCli(["plants", "update", "74", "--name", "Sage A", "--if-match", stale, ...auth]),
    ).resolves.toMatchObject({
      code: 0,
    });
    const current = await currentETag(74n);
    const result = await runCli(["plants", "update", "74", "--name", "Sage B", "--if-match", stale, ...auth]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toBe(
      `plantstore: plant 74 is no longer revision ${stale} (sent as If-Match): it is now revision ${current}. ` +
        "Nothing was changed; read it again (plantstore plants get 74) and retry " +
        "(error 41200 PRECONDITION_FAILED, HTTP 412)\n",
    );
    await expect(server.store.get(74n)).resolves.toEqual({ id: 74n, name: "Sage A" });
  });

  it("exits 1 with 40401 when no plant has the id", async () => {
    const result = await runCli(["plants", "update", "75", "--name", "x", ...auth]);
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/error 40401 PLANT_NOT_FOUND, HTTP 404/);
  });

  it.each([
    ["nothing to change", 76n, [], /nothing to change: pass --name, --tag or --clear-tag/],
    ["--tag with --clear-tag", 77n, ["--tag", "x", "--clear-tag"], /cannot be used with option '--clear-tag'/],
    ["an empty name", 78n, ["--name", ""], /invalid patch: name must not be empty/],
    ["an ETag with a space", 79n, ["--name", "x", "--if-match", '"a b"'], /--if-match/],
  ])("exits 2 on %s, changing nothing", async (_label, id, flags, message) => {
    await seed({ id, name: "Kept" });
    const result = await runCli(["plants", "update", String(id), ...flags, ...auth]);
    expect(result).toMatchObject({ code: 2, stdout: "" });
    expect(result.stderr).toMatch(message);
    await expect(server.store.get(id)).resolves.toEqual({ id, name: "Kept" });
  });
});

describe("plantstore plants delete --if-match", () => {
  it("deletes the plant when the ETag names its current revision", async () => {
    await seed({ id: 90n, name: "Basil" });
    const etag = await currentETag(90n);
    await expect(runCli(["plants", "delete", "90", "--if-match", etag, ...auth])).resolves.toEqual({
      code: 0,
      stdout: "deleted plant 90\n",
      stderr: "",
    });
    await expect(server.store.get(90n)).resolves.toBeUndefined();
  });

  it("exits 1 on a stale --if-match with a message naming the revision sent and the current one, deleting nothing", async () => {
    await seed({ id: 91n, name: "Dill" });
    const stale = await currentETag(91n);
    expect((await runCli(["plants", "update", "91", "--name", "Dill A", "--if-match", stale, ...auth])).code).toBe(0);
    const current = await currentETag(91n);
    const result = await runCli(["plants", "delete", "91", "--if-match", stale.slice(1, -1), ...auth]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr:
        `plantstore: plant 91 is no longer revision ${stale} (sent as If-Match): it is now revision ${current}. ` +
        "Nothing was changed; read it again (plantstore plants get 91) and retry " +
        "(error 41200 PRECONDITION_FAILED, HTTP 412)\n",
    });
    await expect(server.store.get(91n)).resolves.toEqual({ id: 91n, name: "Dill A" });
  });

  it("exits 2 on an --if-match that is no ETag, before sending anything", async () => {
    await seed({ id: 92n, name: "Chive" });
    const result = await runCli(["plants", "delete", "92", "--if-match", "two words", ...auth]);
    expect(result).toMatchObject({ code: 2, stdout: "" });
    expect(result.stderr).toMatch(/Must be an ETag as `plants get` prints it/);
    await expect(server.store.get(92n)).resolves.toEqual({ id: 92n, name: "Chive" });
  });
});

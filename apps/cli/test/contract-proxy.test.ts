import { startStandInServer } from "@plantstore/test-support/stand-in-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { describe, expect, it } from "vitest";

import { behindContractProxy, runCli } from "./run-cli.ts";

/** A stand-in server that serves the seed as its document and answers everything else with `body`. */
const standIn = (status: number, body: string) =>
  startStandInServer(() => ({ status, type: "application/json", body }));

describe("the checking proxy in front of every server the CLI tests run", () => {
  it("makes runCli reject when an answer breaks a document, whatever the CLI made of it", async () => {
    // A well-formed Error with a status the served document does not declare for POST /plants.
    await using proxied = await behindContractProxy(await standIn(418, '{"error":41800,"message":"teapot"}'));
    const run = runCli(["plants", "create", "--id", "1", "--name", "x", "--url", proxied.url, "--token", TOKEN]);
    await expect(run).rejects.toThrow(
      /answers that break the OpenAPI documents:\n.*POST \/plants answered 418, which the document does not declare/,
    );
  });

  it("passes a conforming answer through unchanged", async () => {
    await using proxied = await behindContractProxy(await standIn(200, '{"name":"x"}'));
    const result = await runCli([
      "plants",
      "create",
      "--id",
      "1",
      "--name",
      "x",
      "--json",
      "--url",
      proxied.url,
      "--token",
      TOKEN,
    ]);
    expect(result).toEqual({ code: 0, stdout: '{"name":"x"}\n', stderr: "" });
  });
});

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

import { fakeNodeVersion, findOlderNode, SUPPORTED_NODE } from "@plantstore/test-support/older-node";
import { describe, expect, it } from "vitest";

import type { CliResult } from "./run-cli.ts";

const BIN = fileURLToPath(new URL("../dist/bin.js", import.meta.url));

/** `node <flags> dist/bin.js <args>` with `node`, to completion. */
function runWith(node: string, flags: string[], args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [...flags, BIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const OLDER_NODE = findOlderNode();

describe(`plantstore on a Node older than ${SUPPORTED_NODE}`, () => {
  it("says which Node it needs, in one line on stderr, and exits 1 before loading the program (a faked 20.0.0)", async () => {
    const result = await runWith(process.execPath, fakeNodeVersion("20.0.0"), ["plants", "list", "--help"]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `plantstore needs Node ≥ ${SUPPORTED_NODE}, found 20.0.0\n`,
    });
  });

  // The CI image has a real older Node at /usr/bin/node; the title says whether one ran here.
  it(
    OLDER_NODE === undefined
      ? "says so under a real older Node too: none found on this machine, so only the faked version above ran"
      : `says so under a real older Node too, ${OLDER_NODE.path} (${OLDER_NODE.version})`,
    async ({ annotate }) => {
      if (OLDER_NODE === undefined) {
        await annotate(`no Node older than ${SUPPORTED_NODE} on this machine: the bin ran under a faked version only`);
        return;
      }
      for (const args of [["--help"], ["plants", "list"]]) {
        const result = await runWith(OLDER_NODE.path, [], args);
        expect(result, args.join(" ")).toEqual({
          code: 1,
          stdout: "",
          stderr: `plantstore needs Node ≥ ${SUPPORTED_NODE}, found ${OLDER_NODE.version}\n`,
        });
      }
    },
  );
});

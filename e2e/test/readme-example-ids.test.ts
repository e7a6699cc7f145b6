import { describe, expect, it } from "vitest";

import { codeBlocks, readme } from "./readme-support.ts";
import { ROOT, runOk } from "./workspace.ts";

/**
 * A reader may follow several READMEs in a row against one store: an id created by two of them
 * is a 409 (or a 412) in the second, which its comments do not show. Each README's examples
 * create ids of their own. The tests that run the examples give each README a fresh store, so
 * only this one notices a shared id.
 */

/** The ids a README's code examples create: JSON bodies sent, `PUT /plants/{id}`, `plants create --id`, `createPlant`/`replacePlant`. */
function createdIds(markdown: string): Set<string> {
  const code = ["sh", "ts", ""].flatMap((language) => codeBlocks(markdown, language)).join("\n");
  const patterns = [
    /'\{\s*"id"\s*:\s*(-?\d+)/g,
    /-X PUT \S*\/plants\/(-?\d+)/g,
    /plants create --id (-?\d+)/g,
    /createPlant\(\{\s*id:\s*(-?\d+)n?\b/g,
    /replacePlant\((-?\d+)n?\b/g,
  ];
  return new Set(
    patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((match) => BigInt(match[1]!).toString())),
  );
}

describe("the READMEs' examples", () => {
  it("create ids no other README's examples create", async () => {
    const files = (await runOk("git", ["ls-files", "README.md", "**/README.md"], { cwd: ROOT }))
      .split("\n")
      .filter((file) => file !== "");
    const ids = new Map(files.map((file) => [file, createdIds(readme(file))]));
    // The READMEs with examples that create plants, so a change of their syntax cannot empty this test.
    for (const file of ["README.md", "packages/server/README.md", "packages/client/README.md", "apps/cli/README.md"])
      expect(ids.get(file)?.size, file).toBeGreaterThan(0);
    const shared: string[] = [];
    for (const [index, [file, created]] of [...ids].entries())
      for (const [other, otherCreated] of [...ids].slice(index + 1))
        for (const id of created) if (otherCreated.has(id)) shared.push(`${id}: ${file} and ${other}`);
    expect(shared).toEqual([]);
  });
});

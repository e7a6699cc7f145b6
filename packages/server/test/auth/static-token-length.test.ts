import { randomBytes } from "node:crypto";

import { describe, expect, it } from "vitest";

import { startServer } from "../../src/index.ts";
import { createLogger } from "../../src/logger.ts";
import { logLines, testConfig } from "../support/harness.ts";
import { createTestDatabase } from "../support/test-database.ts";

/**
 * An address over its failed-authentication limit still has a right guess served (a valid token is
 * never refused for someone else's wrong guesses), so for `PLANTSTORE_TOKENS` only their length
 * stands between a guesser and a token: start-up says when one is short, without showing it.
 */
async function startupLog(tokens: string[]): Promise<Array<{ level: number; msg: string; count?: number }>> {
  await using database = await createTestDatabase();
  const { lines, sink } = logLines();
  const running = await startServer({
    config: testConfig(database.url, { tokens, logLevel: "info" }),
    logger: createLogger("info", sink),
  });
  await running.close();
  const text = lines.join("\n");
  for (const token of tokens) expect(text).not.toContain(token);
  return lines.map((l) => JSON.parse(l) as { level: number; msg: string; count?: number });
}

describe("PLANTSTORE_TOKENS shorter than 32 characters", () => {
  it("are counted in a start-up warning that never shows them", async () => {
    const log = await startupLog(["short-secret-1", randomBytes(32).toString("base64url"), "short-secret-2"]);
    const warning = log.find((l) => l.level === 40 && l.msg.includes("PLANTSTORE_TOKENS"));
    expect(warning?.count).toBe(2);
  });

  it("are the only ones warned about: long random tokens start quietly", async () => {
    const log = await startupLog([randomBytes(32).toString("base64url")]);
    expect(log.filter((l) => l.level === 40 && l.msg.includes("PLANTSTORE_TOKENS"))).toEqual([]);
  });
});

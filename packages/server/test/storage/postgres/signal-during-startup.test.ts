import { spawn } from "node:child_process";
import { once } from "node:events";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { databaseBehindProxy } from "../../support/database-behind-proxy.ts";
import { BIN } from "../../support/processes.ts";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A cluster primary passes SIGTERM on to every worker, including one still opening its database
 * (seen under load in the PLANTSTORE_WORKERS=2 shutdown test). The database answering slowly is
 * what makes start-up long enough to be signalled in: the connection is held at a TCP proxy.
 */
describe("plantstore-server serve signalled while it is still starting", () => {
  it("finishes starting, then stops cleanly with exit 0 instead of dying by the signal", async () => {
    const { proxy, url, dispose } = await databaseBehindProxy();
    cleanups.push(dispose);

    proxy.hold();
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], {
      env: { ...process.env, DATABASE_URL: url, PLANTSTORE_TOKENS: "", PLANTSTORE_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });

    // The process is opening its database: start-up has begun and is waiting on it.
    await eventually(() => proxy.accepted() >= 1, { what: "a connection to the database", timeoutMs: 20_000 });
    child.kill("SIGTERM");
    // The process takes the signal (it logs it) rather than dying of it, and waits for the database.
    await eventually(() => output.includes('"msg":"shutting down"') || child.signalCode !== null, {
      what: () => `the SIGTERM to be handled: ${output}`,
    });
    expect(child.signalCode, output).toBeNull();
    expect(child.exitCode, output).toBeNull();
    proxy.release();

    const [code, signal] = await exited;
    expect({ code, signal }, output).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/"msg":"shutting down"/);
    expect(output).toMatch(/"msg":"stopped"/);
  }, 60_000);
});

import { Writable } from "node:stream";

import { Client, DatabaseError } from "pg";
import { describe, expect, it } from "vitest";

import { ApiError } from "./errors.ts";
import { createLogger } from "./logger.ts";
import { asStoreError } from "./storage/postgres/pool.ts";

/** Logs `err` through the server's logger and hands back the line as written. */
function loggedLine(err: unknown): string {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  createLogger("info", sink).warn({ err }, "logged");
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

/** What node-postgres reports when the server ends a session (a restart), with the connection pg-pool attaches to it. */
function terminatedSession(): DatabaseError {
  const error = new DatabaseError("terminating connection due to administrator command", 116, "error");
  error.severity = "FATAL";
  error.code = "57P01";
  return Object.assign(error, { client: new Client({ connectionString: "postgres://plantstore@127.0.0.1:1/db" }) });
}

describe("errors in the log", () => {
  it("never carry an object an error points at: a dropped connection's Client, its cancel key", () => {
    const line = loggedLine(terminatedSession());
    expect(line).not.toMatch(/client|secretKey|connection"|processID/i);
    expect(JSON.parse(line)).toMatchObject({
      err: { type: "DatabaseError", message: "terminating connection due to administrator command", code: "57P01" },
    });
  });

  it("write a storage failure of a known kind in one short line: its message, kind and the driver's code, no stack", () => {
    const line = loggedLine(asStoreError(terminatedSession()));
    expect(line.length).toBeLessThan(500);
    expect(JSON.parse(line)).toMatchObject({
      err: {
        type: "StoreUnavailableError",
        message: expect.stringContaining("terminating connection due to administrator command"),
        kind: "unavailable",
        code: "57P01",
      },
    });
    expect(line).not.toContain("stack");
    // The answer a request got for it keeps its own catalogue code, and leaves the stack out too.
    const answered = new ApiError("UNAVAILABLE", "the database is not reachable", {
      cause: asStoreError(terminatedSession()),
    });
    expect(JSON.parse(loggedLine(answered))).toMatchObject({ err: { type: "ApiError", code: "UNAVAILABLE" } });
    expect(loggedLine(answered)).not.toMatch(/stack|secretKey/);
  });

  it("keep the stack, causes and plain fields of an unexpected failure, and drop its objects at every depth", () => {
    const cause = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", errno: -104, socket: { fd: 7 } });
    const failure = new AggregateError([terminatedSession()], "could not settle a batch", { cause });
    const logged = JSON.parse(loggedLine(failure)) as { err: Record<string, unknown> };
    expect(logged.err["message"]).toBe("could not settle a batch: read ECONNRESET");
    expect(logged.err["stack"]).toMatch(
      /^AggregateError: could not settle a batch\n[\s\S]*caused by: Error: read ECONNRESET/,
    );
    expect(logged.err["aggregateErrors"]).toEqual([expect.objectContaining({ type: "DatabaseError", code: "57P01" })]);
    expect(JSON.stringify(logged)).not.toMatch(/client|secretKey|socket/i);
  });
});

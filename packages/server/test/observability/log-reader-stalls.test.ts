import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { BIN, freePort } from "../support/spawned-server.ts";
import { createTestDatabase } from "../support/test-database.ts";

/**
 * The log never waits for its reader (src/stdout-blocks.ts): a full block is written at once with
 * a non-blocking write where stdout allows one, and queued when the reader is behind. These stop
 * the reader while the server answers more than a megabyte of access lines, more than a pipe or a
 * socket holds: every answer must still come, and once the reader reads again, every line, whole.
 * Were a write to wait for the reader, the server would stop answering and the requests time out.
 */
const TOKEN = "log-reader-stalls-test-token-0123456789abcdef";
const REQUESTS = 4_000;
const CONCURRENCY = 32;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Stdout = "socket" | "fifo" | "file";

type Started = { child: ChildProcess; url: string; log: () => Promise<string>; resume: () => void };

/** The server with its stdout on a socket (Node's `stdio: "pipe"`), a FIFO or a regular file, not read until `resume`. */
async function start(stdout: Stdout): Promise<Started> {
  const database = await createTestDatabase();
  cleanups.push(() => database.dispose());
  const dir = mkdtempSync(join(tmpdir(), "plantstore-log-reader-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: database.url,
    PLANTSTORE_TOKENS: TOKEN,
    PLANTSTORE_LOG_LEVEL: "info",
    PORT: String(port),
    HOST: "127.0.0.1",
  };

  let child: ChildProcess;
  let collected: Promise<string>;
  let resume: () => void;
  if (stdout === "socket") {
    child = spawn(process.execPath, [BIN, "serve"], { env, stdio: ["ignore", "pipe", "inherit"] });
    const reader = child.stdout as Readable;
    reader.pause();
    collected = new Promise((resolve) => {
      const chunks: Buffer[] = [];
      reader.on("data", (chunk: Buffer) => chunks.push(chunk));
      reader.on("end", () => resolve(Buffer.concat(chunks).toString()));
    });
    resume = () => reader.resume();
  } else if (stdout === "fifo") {
    const fifo = join(dir, "stdout");
    execFileSync("mkfifo", [fifo]);
    // The read end opens on the thread pool, as the write end's open waits for a reader.
    const readEnd = open(fifo, "r");
    const writeEnd = openSync(fifo, "w");
    child = spawn(process.execPath, [BIN, "serve"], { env, stdio: ["ignore", writeEnd, "inherit"] });
    closeSync(writeEnd);
    const handle = await readEnd;
    let go: () => void = () => undefined;
    const resumed = new Promise<void>((resolve) => (go = resolve));
    collected = resumed.then(() => handle.readFile("utf8")).finally(() => handle.close());
    resume = go;
  } else {
    const file = join(dir, "stdout.log");
    const fd = openSync(file, "w");
    child = spawn(process.execPath, [BIN, "serve"], { env, stdio: ["ignore", fd, "inherit"] });
    closeSync(fd);
    let go: () => void = () => undefined;
    const resumed = new Promise<void>((resolve) => (go = resolve));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    collected = Promise.all([resumed, exited]).then(() => readFileSync(file, "utf8"));
    resume = go;
  }
  cleanups.push(() => void child.kill("SIGKILL"));

  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
      return (await fetch(`${url}/healthz`).catch(() => undefined))?.status === 200;
    },
    { what: () => `the server to answer GET /healthz`, timeoutMs: 20_000 },
  );
  return { child, url, log: () => collected, resume };
}

const requestId = (n: number) => `stall-${String(n).padStart(6, "0")}-${"x".repeat(110)}`;

async function readMany(url: string): Promise<void> {
  const created = await fetch(`${url}/plants`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: 1, name: "Fern" }),
  });
  expect(created.status).toBe(200);
  let next = 0;
  const worker = async () => {
    while (next < REQUESTS) {
      const n = next++;
      const answer = await fetch(`${url}/plants/1`, {
        headers: { authorization: `Bearer ${TOKEN}`, "x-request-id": requestId(n) },
        // Far above an answer's time here; what it catches is a server that stopped answering.
        signal: AbortSignal.timeout(10_000),
      });
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

describe.each<Stdout>(["socket", "fifo", "file"])("a log reader that stops reading (stdout on a %s)", (stdout) => {
  it("holds up no answer, and gets every line whole once it reads again", async () => {
    const server = await start(stdout);
    await readMany(server.url);
    server.resume();
    server.child.kill("SIGTERM");
    const output = await server.log();
    const lines = output.split("\n").filter((line) => line.length > 0);
    // More than any pipe or socket buffer here holds, so the writer found it full.
    expect(output.length).toBeGreaterThan(1_000_000);
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    const ids = lines
      .map((line) => (JSON.parse(line) as { reqId?: string }).reqId)
      .filter((id): id is string => id?.startsWith("stall-") === true);
    expect(new Set(ids).size).toBe(REQUESTS);
    expect(ids.toSorted()).toEqual(Array.from({ length: REQUESTS }, (_, n) => requestId(n)));
  });
});

// The socket only: the FIFO's writer is the same (nonblocking-writer.test.ts checks its deadline).
describe("a log reader that never reads again (stdout on a socket)", () => {
  it("holds up no answer, and cannot hold the shutdown past its 5 s wait", async () => {
    const server = await start("socket");
    await readMany(server.url);
    const exited = new Promise<number | null>((resolve) => server.child.once("exit", (code) => resolve(code)));
    const stopping = performance.now();
    server.child.kill("SIGTERM");
    expect(await exited).toBe(0);
    // The drain deadline's 5 s, and the rest of the shutdown; a writer waiting for this reader
    // would never exit.
    expect(performance.now() - stopping).toBeLessThan(12_000);
    server.resume();
    const lines = (await server.log()).split("\n").filter((line) => line.length > 0);
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
  }, 30_000);
});

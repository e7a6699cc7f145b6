import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statSync, truncateSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { type Clock, systemClock } from "../../../src/clock.ts";
import { type Config, startServer } from "../../../src/index.ts";
import { createLogger } from "../../../src/logger.ts";
import { expectErrorShape, logLines, rawRequest, testConfig, type TestResponse, TOKEN } from "../../support/harness.ts";

/**
 * SQLite's storage failing under a running server: a full disk (a small tmpfs, filled) and a
 * write lock held by another connection. Each answers 503 with its own code and `Retry-After`,
 * takes `/readyz` to 503 within 2 s and back to 200 within 2 s of the cause going away, and
 * loses nothing it acknowledged nor stores anything it refused. A disk with room for the probe's
 * one row but not for the creates keeps `/readyz` at 503 once creates failed after a probe.
 */

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  // Last opened, first closed: the server before the filesystem it writes to.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A fresh tmpfs of `megabytes`: CI runs as root, and a test that cannot fill a disk must fail, not pass. */
function mountTmpfs(megabytes: number): string {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${megabytes}m`, "tmpfs", dir], { stdio: "pipe" });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const detail = (error as { stderr?: Buffer }).stderr?.toString().trim() ?? String(error);
    throw new Error(
      `this test fills a small tmpfs to run SQLite out of disk space, and mounting one needs root (CI runs as root): ${detail}`,
      { cause: error },
    );
  }
  cleanups.push(() => {
    execFileSync("umount", [dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Writes `path` until the filesystem refuses another byte. */
function fillDisk(path: string): void {
  const fd = openSync(path, "w");
  try {
    for (const size of [1 << 20, 4096, 1]) {
      const chunk = Buffer.alloc(size, 1);
      for (;;) {
        try {
          if (writeSync(fd, chunk) < size) break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOSPC") break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

async function serverOn(databasePath: string, overrides: Partial<Config> = {}, clock?: Clock) {
  const { lines, sink } = logLines();
  const running = await startServer({
    config: testConfig(`sqlite:${databasePath}`, { logLevel: "info", ...overrides }),
    logger: createLogger("info", sink),
    ...(clock === undefined ? {} : { clock }),
  });
  cleanups.push(() => running.close());
  let nextId = 1;
  const post = (id: number, name: string) =>
    rawRequest(running.url, {
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ id, name }),
    });
  const acknowledged: number[] = [];
  const refused: number[] = [];
  /** POSTs new plants at once and sorts them into acknowledged (200) and refused (anything else). */
  const create = async (count: number, nameLength = 0): Promise<TestResponse[]> => {
    const ids = Array.from({ length: count }, () => nextId++);
    const answers = await Promise.all(ids.map((id) => post(id, `plant ${id} ${"n".repeat(nameLength)}`.trim())));
    answers.forEach((answer, i) => (answer.status === 200 ? acknowledged : refused).push(ids[i]!));
    return answers;
  };
  const readyz = () => rawRequest(running.url, { method: "GET", path: "/readyz" });
  /** Every acknowledged plant is stored, and no refused one is. */
  const checkStored = () => {
    const db = new DatabaseSync(databasePath, { readOnly: true });
    try {
      const stored = new Set((db.prepare("SELECT id FROM plants").all() as Array<{ id: number }>).map((r) => r.id));
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      expect(refused.filter((id) => stored.has(id))).toEqual([]);
    } finally {
      db.close();
    }
  };
  /**
   * Creates plants through the store, all in one tick, so they travel as one group: one
   * transaction whose size the test decides. Sorted like `create`'s; resolves with how many were stored.
   */
  const createInOneGroup = async (count: number, nameLength: number): Promise<number> => {
    const ids = Array.from({ length: count }, () => nextId++);
    const outcomes = await Promise.allSettled(
      ids.map((id) => running.store.create({ id: BigInt(id), name: `plant ${id} ${"n".repeat(nameLength)}` })),
    );
    outcomes.forEach((outcome, i) => (outcome.status === "fulfilled" ? acknowledged : refused).push(ids[i]!));
    return outcomes.filter((outcome) => outcome.status === "fulfilled").length;
  };
  return { running, lines, create, createInOneGroup, readyz, checkStored, acknowledged, refused };
}

function expectStorageAnswer(answer: TestResponse, code: number, retryAfter: string, says: RegExp): void {
  expectErrorShape(answer, 503, code);
  expect(answer.headers["retry-after"]).toBe(retryAfter);
  const { message } = answer.json as { message: string };
  expect(message).toMatch(says);
  // The cause is named in our words; SQLite's own text and codes stay in the log.
  expect(message).not.toMatch(/sqlite|SQLITE_|errcode/i);
}

/**
 * Time that passes only when the test moves it on (its timers run on the wall clock), so a span
 * readiness keeps lasts however slowly a loaded machine runs the requests inside it.
 */
function standingClock(): { clock: Clock; advance: (ms: number) => void } {
  let now = Date.now();
  return {
    clock: { now: () => now, setTimer: (callback, ms) => systemClock.setTimer(callback, ms) },
    advance: (ms) => (now += ms),
  };
}

/** Polls /readyz until its status is `status`, within `ms`; resolves with that answer. */
async function readyzBecomes(readyz: () => Promise<TestResponse>, status: number, ms: number): Promise<TestResponse> {
  let last: TestResponse | undefined;
  return eventually(async () => ((last = await readyz()).status === status ? last : false), {
    what: () => `/readyz to answer ${status}; it answered ${last?.status} ${last?.text}`,
    timeoutMs: ms,
  });
}

describe("SQLite on a full disk", () => {
  it("answers 503 STORAGE_FULL with Retry-After, is not ready, and recovers within 2 s of space being freed", async () => {
    const dir = mountTmpfs(8);
    const server = await serverOn(join(dir, "plants.db"));
    expect((await server.create(5)).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);

    const filler = join(dir, "filler");
    fillDisk(filler);
    // The WAL's last page may hold a commit or two more; the disk is full once one is refused.
    let answer: TestResponse | undefined;
    for (let i = 0; i < 50 && answer?.status !== 503; i++) [answer] = await server.create(1);
    expectStorageAnswer(answer!, 50303, "5", /disk is full/);
    // A batch that fails fails whole: every plant in it gets the 503, none a 200.
    const burst = await server.create(20);
    for (const each of burst) expectStorageAnswer(each, 50303, "5", /disk is full/);

    const notReady = await readyzBecomes(server.readyz, 503, 2_000);
    expectErrorShape(notReady, 503, 50303);
    expect((notReady.json as { message: string }).message).toMatch(/writes are failing: .*disk is full/);
    // Readiness probes with a real write, which fails while the disk is full.
    expect((await server.readyz()).status).toBe(503);

    unlinkSync(filler);
    await readyzBecomes(server.readyz, 200, 2_000);
    expect((await server.create(3)).map((a) => a.status)).toEqual([200, 200, 200]);
    await server.running.close();
    server.checkStored();
  });
});

describe("SQLite on a disk with room for a small write but not for the creates that arrive", () => {
  it("stays not ready while creates keep failing, though its one-row write probe still fits in the WAL", async () => {
    const { clock, advance } = standingClock();
    const dir = mountTmpfs(8);
    const server = await serverOn(join(dir, "plants.db"), {}, clock);
    expect((await server.create(5)).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);

    // 128 KiB left, then one group of creates of about 400 KB: it grows the WAL into all of that
    // room and fails there. The WAL file keeps its length, so the next commits reuse the room: enough
    // for the probe's one row, never for a group like the one that failed.
    const filler = join(dir, "filler");
    fillDisk(filler);
    truncateSync(filler, statSync(filler).size - 128 * 1024);
    const burst = () => server.createInOneGroup(600, 240);
    expect(await burst(), "plants stored of a group larger than the room left").toBe(0);

    // The first /readyz believes its probe (nothing contradicted one yet); once the creates after
    // it failed too, /readyz stays 503 with the code of their failure, however often it is asked.
    const rounds: string[] = [];
    for (let round = 0; round < 5; round++) {
      const ready = await server.readyz();
      rounds.push(`${ready.status}/${await burst()}`);
      if (round > 0) {
        expectErrorShape(ready, 503, 50303);
        expect((ready.json as { message: string }).message).toMatch(
          /^writes are failing: .*disk is full.*the next probe is in \d+\.\d s$/,
        );
      }
    }
    expect(rounds, rounds.join(" ")).toEqual(["200/0", ...Array.from({ length: 4 }, () => "503/0")]);

    // Space freed: once the distrust has passed, a probe is believed again and creates succeed.
    unlinkSync(filler);
    advance(10_000);
    await readyzBecomes(server.readyz, 200, 2_000);
    expect((await server.create(3)).map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await server.readyz()).status).toBe(200);
    await server.running.close();
    server.checkStored();
  });
});

describe("SQLite with its write lock held by another connection", () => {
  it("answers 503 STORAGE_BUSY with Retry-After, is not ready while writes wait, and recovers within 2 s of the release", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plantstore-locked-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "plants.db");
    const server = await serverOn(path, { sqliteBusyTimeoutMs: 1_500 });
    expect((await server.create(3)).map((a) => a.status)).toEqual([200, 200, 200]);

    // As `sqlite3 plants.db` → `BEGIN IMMEDIATE;` would: another connection holds the write lock.
    const other = new DatabaseSync(path);
    cleanups.push(() => {
      if (other.isOpen) other.close();
    });
    other.exec("BEGIN IMMEDIATE");
    const waiting = server.create(10);
    const stalled = await readyzBecomes(server.readyz, 503, 2_000);
    expectErrorShape(stalled, 503, 50302);
    expect((stalled.json as { message: string }).message).toMatch(/writes are stalled/);
    for (const each of await waiting) expectStorageAnswer(each, 50302, "1", /busy/);
    // No write is under way now: readiness probes, and the probe waits on the lock too.
    expectErrorShape(await server.readyz(), 503, 50302);

    other.exec("ROLLBACK");
    await readyzBecomes(server.readyz, 200, 2_000);
    expect((await server.create(3)).map((a) => a.status)).toEqual([200, 200, 200]);
    other.close();
    await server.running.close();
    server.checkStored();
  });
});

describe("the log while every write fails", () => {
  it("writes one full line per kind of failure per interval and the count of the rest, not a line per request", async () => {
    const dir = mountTmpfs(8);
    const server = await serverOn(join(dir, "plants.db"));
    fillDisk(join(dir, "filler"));
    let refusedAtOnce = 0;
    for (let round = 0; round < 20; round++) {
      refusedAtOnce = (await server.create(10)).filter((a) => a.status !== 200).length;
    }
    expect(refusedAtOnce).toBe(10);
    await server.running.close();
    const failed = server.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => typeof l["msg"] === "string" && l["msg"].startsWith("request failed"));
    // One full line, one (at shutdown, within the 10 s interval) with how many more there were.
    expect(failed.length, JSON.stringify(failed.map((l) => l["msg"]))).toBeLessThanOrEqual(3);
    expect(failed[0]).toMatchObject({ msg: "request failed", code: "STORAGE_FULL" });
    const repeats = failed.slice(1).reduce((sum, l) => sum + Number(l["repeats"] ?? 0), 0);
    expect(repeats + 1).toBe(server.refused.length);
  });
});

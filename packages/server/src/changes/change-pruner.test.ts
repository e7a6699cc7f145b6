import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import type { Clock } from "../clock.ts";
import { SqliteStore } from "../storage/sqlite/sqlite-store.ts";
import { startChangePruner } from "./change-pruner.ts";

/**
 * The pruning schedule on a clock the test moves, over a real SQLite store in a scratch file. What
 * pruning deletes on each backend is pinned by test/storage/change-log.test.ts.
 */
const HOUR = 3_600_000;
let dir: string;
let store: SqliteStore;

function testClock() {
  let now = Date.now();
  let timers: Array<{ due: number; callback: () => unknown }> = [];
  const clock: Clock = {
    now: () => now,
    setTimer: (callback, ms) => {
      const timer = { due: now + ms, callback };
      timers.push(timer);
      return () => (timers = timers.filter((t) => t !== timer));
    },
  };
  /** Moves time on and waits for what the due timers started. */
  const advance = async (ms: number) => {
    now += ms;
    const due = timers.filter((t) => t.due <= now);
    timers = timers.filter((t) => t.due > now);
    await Promise.all(due.map((timer) => timer.callback()));
  };
  return { clock, advance, pending: () => timers.length };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plantstore-pruner-"));
  store = SqliteStore.open({ path: join(dir, "plants.db") });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("startChangePruner", () => {
  it("prunes what passed the retention every tenth of it, a chunk at a time until none is left, keeping the newest", async () => {
    const { clock, advance, pending } = testClock();
    for (let i = 0; i < 7; i++) await store.create({ id: BigInt(i), name: "p" });
    const [first, ...rest] = await store.changesAfter(0n, 10);
    const pruner = startChangePruner({
      store,
      retentionMs: 10 * HOUR,
      logger: pino({ level: "silent" }),
      clock,
      chunk: 2,
    });
    // Every minute (a tenth of 10 h, capped at a minute): nothing is old enough yet.
    await advance(60_000);
    expect(await store.oldest()).toBe(first!.position);
    await advance(10 * HOUR);
    expect(await store.changesAfter(0n, 10)).toEqual([rest.at(-1)]);
    expect(pending()).toBe(1);
    await pruner.stop();
    expect(pending()).toBe(0);
  });

  it("logs a failed round and tries again at the next", async () => {
    const { clock, advance } = testClock();
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    // A store that is closed refuses every write: each round fails as it would on a database that is away.
    const closed = SqliteStore.open({ path: join(dir, "closed.db") });
    await closed.close();
    const pruner = startChangePruner({ store: closed, retentionMs: HOUR, logger, clock });
    await advance(60_000);
    await advance(60_000);
    expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([
      "pruning the change log failed; trying again at the next round",
      "pruning the change log failed; trying again at the next round",
    ]);
    await pruner.stop();
  });
});

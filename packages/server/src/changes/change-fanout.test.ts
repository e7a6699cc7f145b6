import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import type { Clock } from "../clock.ts";
import { ChangeFanout } from "./change-fanout.ts";
import type { Change, ChangeLog } from "./change-log.ts";

/**
 * A test double of the ChangeLog interface alone (the stores' logs are tested on both backends in
 * their own suites): changes appended in order, reads that can be held, wake-ups the test sends.
 */
function memoryLog() {
  const changes: Change[] = [];
  const listeners = new Set<() => void>();
  let held: Array<() => void> | undefined;
  let reads = 0;
  const log: ChangeLog = {
    async changesAfter(after, limit) {
      reads++;
      if (held !== undefined) await new Promise<void>((resolve) => held!.push(resolve));
      return changes.filter((change) => change.position > after).slice(0, limit);
    },
    head: async () => changes.at(-1)?.position ?? 0n,
    oldest: async () => changes[0]?.position ?? 1n,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return {
    log,
    get reads() {
      return reads;
    },
    /** Appends changes silently: a lost notification. */
    append(count: number, tag: (position: bigint) => string | null = () => null) {
      for (let i = 0; i < count; i++) {
        const position = BigInt(changes.length + 1);
        changes.push({
          position,
          kind: "plant.created",
          plantId: position,
          data: `{"id":${position},"name":"p${position}"}`,
          tag: tag(position),
          previousTag: null,
          at: new Date(0),
        });
      }
    },
    notify: () => listeners.forEach((listener) => listener()),
    hold: () => (held = []),
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      waiting.forEach((resolve) => resolve());
    },
    prune: (below: bigint) =>
      changes.splice(
        0,
        changes.findIndex((change) => change.position >= below),
      ),
  };
}

/** A clock whose timers run only when the test moves it on. */
function manualClock(): Clock & { advance(ms: number): void } {
  let now = 0;
  let timers: Array<{ at: number; run: () => unknown }> = [];
  return {
    now: () => now,
    setTimer(run, ms) {
      const timer = { at: now + ms, run };
      timers.push(timer);
      return () => (timers = timers.filter((t) => t !== timer));
    },
    advance(ms) {
      now += ms;
      const due = timers.filter((t) => t.at <= now);
      timers = timers.filter((t) => t.at > now);
      due.forEach((t) => t.run());
    },
  };
}

const positionsIn = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));

function setUp(pageSize = 500) {
  const memory = memoryLog();
  const clock = manualClock();
  let formatted = 0;
  const fanout = new ChangeFanout({
    log: memory.log,
    format: (changes) => {
      formatted++;
      return changes.map((change) => `id: ${change.position}\n\n`).join("");
    },
    formatPosition: (position) => `past: ${position}\n\n`,
    pollMs: 1_000,
    pageSize,
    clock,
    onReadError: (error) => {
      throw error;
    },
  });
  const listen = (after: bigint, tag?: string) => {
    const received: number[] = [];
    const subscription = fanout.subscribe({ tag, write: (text) => received.push(...positionsIn(text)) }, after);
    return { received, subscription };
  };
  return { memory, clock, fanout, listen, formatted: () => formatted };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("ChangeFanout, one reader for every subscriber", () => {
  it("hands each subscriber every change after its own resume point, in order, once", async () => {
    const { memory, fanout, listen } = setUp(7);
    memory.append(20);
    const first = listen(5n);
    await first.subscription.live;
    const second = listen(15n);
    await second.subscription.live;
    memory.append(30);
    memory.notify();
    await eventually(() => first.received.length === 45 && second.received.length === 35, {
      what: () => `all 50 changes (got ${first.received.length} and ${second.received.length})`,
    });
    expect(first.received).toEqual(range(6, 50));
    expect(second.received).toEqual(range(16, 50));
    fanout.stop();
  });

  it("loses and repeats nothing when a subscriber catches up while the reader reads on", async () => {
    const { memory, fanout, listen } = setUp(3);
    const early = listen(0n);
    await early.subscription.live;
    memory.append(10);
    memory.notify();
    await eventually(() => early.received.length === 10, { what: "the first ten changes" });
    // The reader is at 10; a late subscriber from 2 catches up while more changes commit and the
    // reader reads them too.
    memory.hold();
    const late = listen(2n);
    memory.append(5);
    memory.notify();
    memory.release();
    await late.subscription.live;
    memory.notify();
    await eventually(() => early.received.length === 15 && late.received.length === 13, {
      what: () => `15 and 13 changes (got ${early.received.length} and ${late.received.length})`,
    });
    expect(early.received).toEqual(range(1, 15));
    expect(late.received).toEqual(range(3, 15));
    fanout.stop();
  });

  it("reads on its periodic poll when a wake-up is lost", async () => {
    const { memory, clock, fanout, listen } = setUp();
    const subscriber = listen(0n);
    await subscriber.subscription.live;
    memory.append(3);
    // No notify: only the poll finds them.
    expect(subscriber.received).toEqual([]);
    clock.advance(1_000);
    await eventually(() => subscriber.received.length === 3, { what: "the polled changes" });
    expect(subscriber.received).toEqual([1, 2, 3]);
    fanout.stop();
  });

  it("filters by tag: a change matches by its tag or its previous tag", async () => {
    const { memory, fanout, listen } = setUp();
    const subscriber = listen(0n, "indoor");
    await subscriber.subscription.live;
    memory.append(6, (position) => (position % 2n === 0n ? "indoor" : "outdoor"));
    memory.notify();
    await eventually(() => subscriber.received.length === 3, { what: "the indoor changes" });
    expect(subscriber.received).toEqual([2, 4, 6]);
    fanout.stop();
  });

  it("reads the log once and writes each batch's text once for a thousand subscribers", async () => {
    const { memory, fanout, listen, formatted } = setUp();
    const subscribers = Array.from({ length: 1_000 }, () => listen(0n));
    await Promise.all(subscribers.map((subscriber) => subscriber.subscription.live));
    const readsBefore = memory.reads;
    const formattedBefore = formatted();
    memory.append(10);
    memory.notify();
    await eventually(() => subscribers.every((subscriber) => subscriber.received.length === 10), {
      what: "every subscriber's ten changes",
    });
    expect(memory.reads - readsBefore).toBe(1);
    expect(formatted() - formattedBefore).toBe(1);
    expect(fanout.liveCount).toBe(1_000);
    fanout.stop();
  });

  it("stops handing changes to a closed subscriber", async () => {
    const { memory, fanout, listen } = setUp();
    const subscriber = listen(0n);
    await subscriber.subscription.live;
    memory.append(1);
    memory.notify();
    await eventually(() => subscriber.received.length === 1, { what: "the first change" });
    subscriber.subscription.close();
    expect(fanout.liveCount).toBe(0);
    memory.append(1);
    memory.notify();
    const other = listen(1n);
    await other.subscription.live;
    await eventually(() => other.received.length === 1, { what: "the second change, to another subscriber" });
    expect(subscriber.received).toEqual([1]);
    fanout.stop();
  });

  describe("startingPoint", () => {
    it("starts at the head without a resume point, after it with one the log holds, and resets otherwise", async () => {
      const { memory, fanout } = setUp();
      memory.append(10);
      memory.prune(5n);
      expect(await fanout.startingPoint(undefined)).toEqual({ after: 10n, reset: false });
      expect(await fanout.startingPoint(4n)).toEqual({ after: 4n, reset: false });
      expect(await fanout.startingPoint(10n)).toEqual({ after: 10n, reset: false });
      expect(await fanout.startingPoint(3n)).toEqual({ after: 10n, reset: true });
      expect(await fanout.startingPoint(11n)).toEqual({ after: 10n, reset: true });
      fanout.stop();
    });
  });
});

import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";

import { afterEach, describe, expect, it } from "vitest";

import type { Clock } from "../clock.ts";
import { watchWriteStalls } from "./write-stalls.ts";

const STALL_MS = 400;
const CHECK_EVERY_MS = 20;

/**
 * A clock the test moves: the watcher's checks run when `advance` reaches them. The sockets are
 * real, so between steps the test lets their I/O happen (`ioTurn`); only the watcher's time is
 * simulated, which makes the bounds exact instead of a race with a loaded machine.
 */
class ManualClock implements Clock {
  #now = 0;
  #timers: Array<{ due: number; callback: () => unknown }> = [];
  now(): number {
    return this.#now;
  }
  setTimer(callback: () => unknown, ms: number): () => void {
    const timer = { due: this.#now + ms, callback };
    this.#timers.push(timer);
    return () => (this.#timers = this.#timers.filter((t) => t !== timer));
  }
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const next = this.#timers.filter((t) => t.due <= until).sort((a, b) => a.due - b.due)[0];
      if (next === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = next.due;
      next.callback();
    }
    this.#now = until;
  }
}

/** Lets pending socket I/O run (a poll phase of the event loop) before the next step. */
const ioTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A loopback connection: the server's side (watched) and a paused client that reads only when told. */
async function connection(): Promise<{ serverSide: Socket; client: Socket }> {
  const listener = createServer();
  listener.listen(0, "127.0.0.1");
  await once(listener, "listening");
  const accepted = once(listener, "connection") as Promise<[Socket]>;
  const client = connect((listener.address() as AddressInfo).port, "127.0.0.1");
  client.pause();
  client.on("error", () => undefined);
  const [serverSide] = await accepted;
  serverSide.on("error", () => undefined);
  cleanups.push(() => {
    client.destroy();
    serverSide.destroy();
    listener.close();
  });
  return { serverSide, client };
}

function watch(sockets: Socket[]): ManualClock {
  const clock = new ManualClock();
  const watcher = watchWriteStalls(sockets, { stallMs: STALL_MS, checkEveryMs: CHECK_EVERY_MS, clock });
  cleanups.push(() => watcher.stop());
  return clock;
}

/** Moves the clock a check at a time, with the sockets' I/O between checks, until `socket` is destroyed; returns the time that took. */
async function untilDestroyed(clock: ManualClock, socket: Socket): Promise<number> {
  const start = clock.now();
  while (!socket.destroyed) {
    if (clock.now() - start > 60_000) throw new Error("not destroyed after a minute of clock time");
    await ioTurn();
    clock.advance(CHECK_EVERY_MS);
  }
  return clock.now() - start;
}

describe("watchWriteStalls", () => {
  it("destroys a connection whose peer takes none of a large write, within the bound", async () => {
    const { serverSide } = await connection();
    const clock = watch([serverSide]);
    // Far more than the socket buffers hold: the write stays pending.
    serverSide.write(Buffer.alloc(64 * 1024 * 1024));
    expect(await untilDestroyed(clock, serverSide)).toBeLessThanOrEqual(STALL_MS + 250);
  });

  it("leaves an idle connection with nothing to send alone", async () => {
    const { serverSide, client } = await connection();
    const { serverSide: stalled } = await connection();
    const clock = watch([serverSide, stalled]);
    stalled.write(Buffer.alloc(64 * 1024 * 1024));
    await untilDestroyed(clock, stalled);
    expect(serverSide.destroyed).toBe(false);
    expect(client.destroyed).toBe(false);
  });

  it("spares a peer that keeps taking bytes, for longer than the bound", async () => {
    const { serverSide, client } = await connection();
    const clock = watch([serverSide]);
    const total = 16 * 1024 * 1024;
    serverSide.write(Buffer.alloc(total));
    // 64 KiB per 5 ms of the clock: the one write stays pending far past the bound, and only its
    // shrinking shows progress.
    let taken = 0;
    while (taken < total) {
      if (serverSide.destroyed) throw new Error(`destroyed after ${taken} bytes, at ${clock.now()} ms`);
      if (client.readableLength === 0) await once(client, "readable");
      taken += (client.read(Math.min(64 * 1024, client.readableLength)) as Buffer | null)?.length ?? 0;
      await ioTurn();
      clock.advance(5);
    }
    expect(clock.now()).toBeGreaterThan(STALL_MS);
    expect(serverSide.destroyed).toBe(false);
  });
});

import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";

import { afterEach, describe, expect, it } from "vitest";

import { watchWriteStalls } from "./write-stalls.ts";

const STALL_MS = 400;
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

function watch(sockets: Socket[]): void {
  const watcher = watchWriteStalls(sockets, { stallMs: STALL_MS, checkEveryMs: 20 });
  cleanups.push(() => watcher.stop());
}

const closed = (socket: Socket) => once(socket, "close").then(() => Date.now());

describe("watchWriteStalls", () => {
  it("destroys a connection whose peer takes none of a large write, within the bound", async () => {
    const { serverSide } = await connection();
    watch([serverSide]);
    // Far more than the socket buffers hold: the write stays pending.
    serverSide.write(Buffer.alloc(64 * 1024 * 1024));
    const written = Date.now();
    expect((await closed(serverSide)) - written).toBeLessThanOrEqual(STALL_MS + 250);
  });

  it("leaves an idle connection with nothing to send alone", async () => {
    const { serverSide, client } = await connection();
    const { serverSide: stalled } = await connection();
    watch([serverSide, stalled]);
    stalled.write(Buffer.alloc(64 * 1024 * 1024));
    await closed(stalled);
    expect(serverSide.destroyed).toBe(false);
    expect(client.destroyed).toBe(false);
  });

  it("spares a peer that keeps taking bytes, for longer than the bound", async () => {
    const { serverSide, client } = await connection();
    watch([serverSide]);
    const total = 16 * 1024 * 1024;
    serverSide.write(Buffer.alloc(total));
    let taken = 0;
    // ~64 KiB per 5 ms: the one write stays pending far past the bound, and only its shrinking shows progress.
    const reader = setInterval(() => (taken += (client.read() as Buffer | null)?.length ?? 0), 5);
    cleanups.push(() => clearInterval(reader));
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      serverSide.once("close", () => reject(new Error(`destroyed after ${taken} bytes`)));
      const poll = setInterval(() => {
        if (taken < total) return;
        clearInterval(poll);
        resolve();
      }, 10);
      cleanups.push(() => clearInterval(poll));
    });
    expect(Date.now() - started).toBeGreaterThan(STALL_MS);
    expect(serverSide.destroyed).toBe(false);
  });
});

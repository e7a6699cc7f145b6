import { once } from "node:events";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { createTestDatabase, TEST_POSTGRES_URL, type TestDatabase } from "../test-database.ts";

/**
 * A TCP proxy on loopback between the server and PostgreSQL, for fault injection on the network
 * (not a mock: the server speaks the real protocol to the real database through it).
 * - `cut()`: every open connection is reset and new ones are dropped at once, as when the
 *   database host goes away and its port refuses.
 * - `blackhole()`: bytes stop flowing both ways and new connections are accepted but never
 *   answered, as when a network path silently drops packets: only timeouts notice.
 * - `restore()`: forwards again (connections from the outage are dropped, as a real one would be).
 * - `hold()`: new connections are accepted but not yet forwarded; `release()` forwards them, as
 *   when the database is slow to answer a connection (`connected()` counts the accepted ones).
 */
export type TcpProxy = {
  port: number;
  cut(): void;
  blackhole(): void;
  restore(): void;
  hold(): void;
  release(): void;
  connected(): number;
  close(): Promise<void>;
};

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: "up" | "cut" | "blackhole" = "up";
  let held: Array<() => void> | undefined;
  let accepted = 0;
  const pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();

  const server = createServer((client) => {
    client.on("error", () => undefined);
    if (mode === "cut") {
      client.resetAndDestroy();
      return;
    }
    const pair: { client: Socket; upstream: Socket | undefined } = { client, upstream: undefined };
    pairs.add(pair);
    client.on("close", () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    accepted++;
    if (mode === "blackhole") return; // accepted, never answered
    const forward = () => {
      if (client.destroyed) return;
      const upstream = connect(target.port, target.host);
      pair.upstream = upstream;
      upstream.on("error", () => client.destroy());
      upstream.on("close", () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    };
    if (held === undefined) forward();
    else held.push(forward);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");

  const dropAll = () => {
    for (const { client, upstream } of pairs) {
      upstream?.resetAndDestroy();
      client.resetAndDestroy();
    }
    pairs.clear();
  };

  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      mode = "cut";
      dropAll();
    },
    blackhole() {
      mode = "blackhole";
      for (const { client, upstream } of pairs) {
        client.unpipe();
        upstream?.unpipe();
        client.pause();
        upstream?.pause();
      }
    },
    restore() {
      if (mode === "blackhole") dropAll();
      mode = "up";
    },
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = undefined;
      for (const forward of waiting) forward();
    },
    connected: () => accepted,
    async close() {
      mode = "cut";
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A scratch PostgreSQL database reached through a TcpProxy: `url` is the DATABASE_URL that goes
 * through the proxy. `dispose()` closes the proxy, then drops the database.
 */
export async function databaseBehindProxy(): Promise<{
  database: TestDatabase;
  proxy: TcpProxy;
  url: string;
  dispose(): Promise<void>;
}> {
  const database = await createTestDatabase("postgres");
  const upstream = new URL(TEST_POSTGRES_URL);
  const proxy = await startTcpProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
  const viaProxy = new URL(database.url);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(proxy.port);
  const dispose = async () => {
    await proxy.close();
    await database.dispose();
  };
  return { database, proxy, url: viaProxy.toString(), dispose };
}

import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";

/**
 * What the proxy does with traffic, as a sick dependency would:
 * - `pass`: forwards both ways.
 * - `freeze`: bytes stop flowing both ways on open connections, and new connections are accepted
 *   but never answered, as a process under `kill -STOP` or a path that silently drops packets:
 *   only timeouts notice.
 * - `refuse`: open connections are reset and new ones are reset at once, as when the host is up
 *   but nothing listens on the port any more.
 * - `delay`: forwards, holding every chunk for `delayMs` first (a slow network or an overloaded peer).
 */
export type FaultMode = "pass" | "freeze" | "refuse" | "delay";

/**
 * A TCP proxy on loopback between the server and a dependency (PostgreSQL, Redis), for fault
 * injection on the network. Not a mock: the server speaks the real protocol to the real service
 * through it, and the shared service itself is never touched, so a test can freeze "its" Redis
 * without stopping anybody else's.
 */
export type FaultProxy = {
  /** The loopback port to point the server at instead of the dependency's. */
  port: number;
  /** Replace the host and port of a service URL (`postgres://…`, `redis://…`) with the proxy's. */
  urlFor(url: string): string;
  pass(): void;
  freeze(): void;
  refuse(): void;
  delay(ms: number): void;
  /** Resets every open connection once; new connections pass (terminated backends, a network blip). */
  cut(): void;
  mode(): FaultMode;
  /** New connections are accepted but not forwarded until `release()` (a dependency slow to accept). */
  hold(): void;
  release(): void;
  /** Connections accepted since the proxy started. */
  accepted(): number;
  /** Connections open now. */
  open(): number;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

type Pair = { client: Socket; upstream: Socket | undefined };

export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let mode: FaultMode = "pass";
  let delayMs = 0;
  let held: Array<() => void> | undefined;
  let accepted = 0;
  const pairs = new Set<Pair>();

  // One direction of a pair; reads the current mode per chunk, so a freeze or a delay applies to
  // connections already open. A frozen chunk is dropped (a frozen peer never sees it either: the
  // connection is reset when the freeze ends, as a real one would time out).
  const relay = (from: Socket, to: Socket) => {
    from.on("data", (chunk: Buffer) => {
      if (mode === "freeze") return;
      if (mode === "delay" && delayMs > 0) {
        from.pause();
        setTimeout(() => {
          if (!to.destroyed) to.write(chunk);
          from.resume();
        }, delayMs);
        return;
      }
      if (!to.write(chunk)) {
        from.pause();
        to.once("drain", () => from.resume());
      }
    });
    from.on("end", () => to.end());
  };

  const server = createServer((client) => {
    client.on("error", () => undefined);
    if (mode === "refuse") {
      client.resetAndDestroy();
      return;
    }
    const pair: Pair = { client, upstream: undefined };
    pairs.add(pair);
    accepted++;
    client.on("close", () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    const forward = () => {
      if (client.destroyed) return;
      const upstream = connect(target.port, target.host);
      pair.upstream = upstream;
      upstream.on("error", () => client.destroy());
      upstream.on("close", () => client.destroy());
      relay(client, upstream);
      relay(upstream, client);
    };
    // Frozen: accepted, never answered (the connect attempt succeeds, the handshake never does).
    if (mode === "freeze") return;
    if (held === undefined) forward();
    else held.push(forward);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;

  const resetAll = () => {
    for (const { client, upstream } of pairs) {
      upstream?.resetAndDestroy();
      client.resetAndDestroy();
    }
    pairs.clear();
  };

  const close = async () => {
    mode = "refuse";
    resetAll();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };

  return {
    port,
    urlFor(url) {
      const via = new URL(url);
      via.hostname = "127.0.0.1";
      via.port = String(port);
      return via.toString();
    },
    pass() {
      // Connections that lived through a freeze lost bytes: drop them, as a real timeout would.
      if (mode === "freeze") resetAll();
      mode = "pass";
    },
    freeze() {
      mode = "freeze";
    },
    refuse() {
      mode = "refuse";
      resetAll();
    },
    delay(ms) {
      mode = "delay";
      delayMs = ms;
    },
    cut: resetAll,
    mode: () => mode,
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = undefined;
      for (const forward of waiting) forward();
    },
    accepted: () => accepted,
    open: () => pairs.size,
    close,
    [Symbol.asyncDispose]: close,
  };
}

import type { Socket } from "node:net";

import { type Clock, systemClock } from "../clock.ts";

export type WriteStallOptions = {
  /** A connection with answer bytes its peer has not taken for this long is destroyed. */
  stallMs: number;
  /** How often connections are looked at; a stalled one is cut up to this much early, never late. */
  checkEveryMs: number;
  /** Times the checks and the stalls (default: the wall clock); a test moves its own. */
  clock?: Clock;
};

type Progress = { since: number; completed: number; queued: number };

const kProgress = Symbol("plantstore.writeProgress");
type WatchedSocket = Socket & { [kProgress]?: Progress };

/**
 * Cuts connections whose peer stopped reading, measured from the last byte it took.
 *
 * Why not the socket's idle timeout (`server.timeout`) alone: when it fires, Node restarts it for a
 * whole period if the kernel took any bytes since the last write call (net.js `_onTimeout`), and
 * every pipelined answer it flushes is a new write call that restarts it too. A client that
 * pipelines a few large requests and never reads was held for two periods or more, not one.
 *
 * Progress is what the peer took: a write completed (`bytesWritten - writableLength` grows) or the
 * part of a write still waiting for the kernel shrank (the stream handle's `writeQueueSize`, which
 * Node's own timeout reads). Bytes the peer sends do not count: Node stops reading a connection
 * whose answers are backed up, so a stalled reader cannot keep itself alive by writing.
 */
export function watchWriteStalls(sockets: Iterable<Socket>, options: WriteStallOptions): { stop(): void } {
  const clock = options.clock ?? systemClock;
  let previousCheck = clock.now();
  const check = () => {
    const checked = clock.now();
    for (const socket of sockets as Iterable<WatchedSocket>) {
      if (socket.destroyed) continue;
      const queued = writeQueueSize(socket);
      if (socket.writableLength === 0 && queued === 0) {
        socket[kProgress] = undefined;
        continue;
      }
      const completed = socket.bytesWritten - socket.writableLength;
      const last = socket[kProgress];
      if (last === undefined || completed !== last.completed || queued !== last.queued) {
        // The bytes moved some time after the previous check: count from then, so the bound holds.
        socket[kProgress] = { since: previousCheck, completed, queued };
      } else if (checked - last.since >= options.stallMs) {
        socket.destroy();
      }
    }
    previousCheck = checked;
    cancel = clock.setTimer(check, options.checkEveryMs);
  };
  let cancel = clock.setTimer(check, options.checkEveryMs);
  return { stop: () => cancel() };
}

function writeQueueSize(socket: Socket): number {
  const handle = (socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle;
  return handle?.writeQueueSize ?? 0;
}

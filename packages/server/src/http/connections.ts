import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { Server as NetServer, type Socket } from "node:net";

import { ApiError } from "../errors.ts";
import { rawErrorResponse } from "./client-error.ts";
import { HEALTHZ_BODY } from "./plain-paths.ts";
import { watchWriteStalls } from "./write-stalls.ts";

export type ConnectionGuard = {
  /** Connections the HTTP server holds right now (refused ones are not counted). */
  readonly open: number;
  /**
   * Stops accepting (new connections are refused by the OS), answers every request still to come
   * on an open connection with `Connection: close`, gives idle keep-alive connections `idleGraceMs`
   * to send a last request, then closes them. Resolves `true` once every connection is closed, or
   * cuts what is left at `deadline` (epoch ms) and resolves `false`.
   */
  drain(options: { idleGraceMs: number; deadline: number }): Promise<boolean>;
};

export type ConnectionGuardOptions = {
  maxConnections: number;
  /** Called for each connection refused because the cap was reached (for metrics). */
  onRefused?: () => void;
  /** A connection whose peer has taken none of its answer's bytes for this long is destroyed. */
  writeStallMs: number;
};

// A refused client gets this long to send its request, then to read the answer and close; then
// the socket is destroyed.
const REFUSED_LINGER_MS = 2_000;
// How much of a refused connection's first request is read, at most, to find its request line.
const REFUSED_PEEK_BYTES = 1_024;
// A liveness probe: answered on a refused connection as /healthz always answers.
const HEALTHZ_REQUEST_LINE = /^(GET|HEAD) \/healthz(?:\?[^ ]*)? HTTP\/1\.[01]\r?\n/;
const IDLE_SWEEP_MS = 100;
// How often stalled writers are looked for, at most: a stalled one is cut up to this much before
// its bound (the last byte moved at some time between two looks), never after it.
const STALL_CHECK_MS = 1_000;

const kResponse = Symbol("plantstore.response");
type SocketWithResponse = Socket & { [kResponse]?: ServerResponse | undefined };

/**
 * A finished answer is let go of at once: the drain only marks unfinished ones. Held until the
 * connection's next request instead, each keep-alive connection kept its last response (headers
 * and all) alive through the young generation's collections, which then copied it: with 32
 * connections 115 KB survived each scavenge against 8 KB without (`--trace-gc-nvp`, a
 * `GET /plants/{id}` load), and a scavenge paused 0.59 ms against 0.43. A shared function rather
 * than a closure, so the listener allocates nothing; Node detaches the socket from the response
 * before "finish" reaches it, so the socket is found through the request.
 */
function forgetFinished(this: ServerResponse): void {
  const socket = this.req.socket as SocketWithResponse;
  if (socket[kResponse] === this) socket[kResponse] = undefined;
}

/**
 * Owns the lifecycle of the API port's connections: a cap on how many are open at once (so idle or
 * slow clients cannot take every file descriptor) and a graceful drain for shutdown.
 *
 * Why not `server.close()` for the drain: Node's close destroys idle keep-alive connections at
 * once, and a client that is just sending its next request on one sees a reset for a request the
 * server never read. Closing only the listening socket (net.Server's close) and marking every
 * answer `Connection: close` lets each client finish the request it is sending and learn that
 * the connection ends, so under load nothing is cut mid-request.
 */
export function guardConnections(server: Server, options: ConnectionGuardOptions): ConnectionGuard {
  const sockets = new Set<Socket>();
  let draining = false;

  // The HTTP server attaches its parser in its 'connection' listener: it only sees sockets we let through.
  const httpListeners = server.listeners("connection") as Array<(socket: Socket) => void>;
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) => {
    if (sockets.size >= options.maxConnections && !draining) {
      refuse(socket, () => options.onRefused?.());
      return;
    }
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    for (const listener of httpListeners) listener.call(server, socket);
  });
  const stalls = watchWriteStalls(sockets, {
    stallMs: options.writeStallMs,
    checkEveryMs: Math.min(STALL_CHECK_MS, options.writeStallMs / 10),
  });

  // The latest answer of each connection, for the drain. Kept on the socket rather than in a Set
  // with a delete on "close": that add/delete per request kept every response reachable from a
  // long-lived table and was measured at +45 MB peak RSS at 10k requests/s (pnpm bench).
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    if (draining) closeAfter(res);
    (req.socket as SocketWithResponse)[kResponse] = res;
    res.on("finish", forgetFinished);
  });

  return {
    get open() {
      return sockets.size;
    },
    async drain({ idleGraceMs, deadline }) {
      draining = true;
      for (const socket of sockets) {
        // Pipelined requests answer in order, so marking the latest one ends the connection after all.
        const res = (socket as SocketWithResponse)[kResponse];
        if (res !== undefined && !res.writableEnded) closeAfter(res);
      }
      const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
      let sweep: NodeJS.Timeout | undefined;
      const grace = setTimeout(
        () => {
          server.closeIdleConnections();
          // Connections whose answer was already under way when the drain began end idle later.
          sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
        },
        Math.max(0, Math.min(idleGraceMs, deadline - Date.now())),
      );
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        closed.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())))),
      ]);
      clearTimeout(timer);
      clearTimeout(grace);
      clearInterval(sweep);
      if (!finished) {
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        await closed;
      }
      stalls.stop();
      // http.Server's own close stops its timeout checker; the listening socket is already closed.
      server.close(() => undefined);
      return finished;
    },
  };
}

/** The answer, whenever it is sent, ends its connection. */
function closeAfter(res: ServerResponse): void {
  res.shouldKeepAlive = false;
  if (!res.headersSent) res.setHeader("Connection", "close");
}

/**
 * Answers a connection past the cap once its request line has arrived: `GET`/`HEAD /healthz` as
 * always (a supervisor must not restart a live process because its connections are taken), every
 * other request 503. A refused connection holds no place under the cap, so no number of them can
 * take that answer away, and it never reaches the HTTP parser.
 */
function refuse(socket: Socket, onRefused: () => void): void {
  socket.on("error", () => socket.destroy());
  let head = "";
  let answered = false;
  const answer = () => {
    answered = true;
    const healthz = HEALTHZ_REQUEST_LINE.exec(head);
    if (healthz === null) onRefused();
    socket.end(
      healthz === null
        ? rawErrorResponse(new ApiError("SERVER_BUSY", "the server is at its connection limit; retry shortly"), {
            "Retry-After": "1",
          })
        : rawHealthzResponse(healthz[1] === "HEAD"),
    );
  };
  // Read and drop whatever the client sends, so closing does not reset the answer away.
  socket.on("data", (chunk: Buffer) => {
    if (answered) return;
    head += chunk.toString("latin1", 0, REFUSED_PEEK_BYTES - head.length);
    if (head.includes("\n") || head.length >= REFUSED_PEEK_BYTES) answer();
  });
  socket.setTimeout(REFUSED_LINGER_MS, () => (answered ? socket.destroy() : answer()));
}

function rawHealthzResponse(head: boolean): string {
  return (
    "HTTP/1.1 200 OK\r\n" +
    "Content-Type: application/json; charset=utf-8\r\n" +
    `Content-Length: ${Buffer.byteLength(HEALTHZ_BODY)}\r\n` +
    "Cache-Control: no-store\r\n" +
    "Connection: close\r\n\r\n" +
    (head ? "" : HEALTHZ_BODY)
  );
}

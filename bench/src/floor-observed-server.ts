import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { Socket } from "node:net";

import type Koa from "koa";
import { pino } from "pino";
import { Counter, Histogram, Registry } from "prom-client";

import { serveFloor } from "./floor-app.ts";
import { durableFloorHandlers } from "./floor-durable-handlers.ts";

/**
 * The durable floor (floor-durable-server.ts) with the least that every request of ours must carry
 * and no more: an id (`X-Request-Id`, the caller's or a new UUID), a bearer token checked in
 * constant time against PLANTSTORE_TOKENS (its digest kept per connection, as ours keeps it), one
 * access line formatted by pino, and the request counter and duration histogram of prom-client
 * (their labelled children kept, as ours keeps them). Each at its cheapest, and the access line is
 * handed to a destination that drops it: the write ours pays is left out. So its ratio to the
 * floor is a ceiling for ours: no server that authenticates, counts and logs every request with
 * the libraries we chose can come closer to the floor than this one does (bench/README.md).
 *
 * Run it beside ours: `pnpm bench --scenario read --compare-bin bench/src/floor-observed-server.ts`.
 */
const digest = (token: string) => createHash("sha256").update(token).digest();
const tokens = (process.env["PLANTSTORE_TOKENS"] ?? "").split(",").filter((token) => token.length > 0);
const digests = tokens.map(digest);
const seen = new WeakMap<Socket, { token: string; digest: Buffer }>();
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

// Not a stream.Writable, whose machinery (a callback and a tick per write) would cost more than the write it stands for.
const dropped = { write: (_line: string) => true };
const access = pino({ base: { pid: process.pid, service: "plantstore" } }, dropped);
const registry = new Registry();
const requests = new Counter({
  name: "http_requests_total",
  help: "requests",
  labelNames: ["route", "method", "status"],
  registers: [registry],
});
const duration = new Histogram({
  name: "http_request_duration_seconds",
  help: "durations",
  labelNames: ["route", "method"],
  registers: [registry],
});
const counted = new Map<string, Counter.Internal>();
const timed = new Map<string, Histogram.Internal<"route" | "method">>();
const ROUTE = "/plants/{id}";

function authorized(socket: Socket, header: string | undefined): boolean {
  if (header === undefined || !header.startsWith("Bearer ")) return false;
  const token = header.slice(7);
  let known = seen.get(socket);
  if (known?.token !== token) seen.set(socket, (known = { token, digest: digest(token) }));
  let match = false;
  for (const expected of digests) match = timingSafeEqual(expected, known.digest) || match;
  return match;
}

const observed: Koa.Middleware = async (ctx, next) => {
  const started = performance.now();
  const incoming = ctx.get("x-request-id");
  const requestId = SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
  ctx.set("X-Request-Id", requestId);
  try {
    if (authorized(ctx.req.socket, ctx.req.headers.authorization)) await next();
    else ctx.status = 401;
  } finally {
    const seconds = (performance.now() - started) / 1000;
    const { method, status } = ctx;
    const route = ctx.path === "/plants" ? "/plants" : ROUTE;
    const statusText = String(status);
    let counter = counted.get(route + method + statusText);
    if (counter === undefined) {
      counted.set(route + method + statusText, (counter = requests.labels({ route, method, status: statusText })));
    }
    counter.inc();
    let timer = timed.get(route + method);
    if (timer === undefined) timed.set(route + method, (timer = duration.labels({ route, method })));
    timer.observe(seconds);
    access.info({ reqId: requestId, method, route, status, ms: Math.round(seconds * 1e5) / 100 }, "request");
  }
};

serveFloor("observed floor", await durableFloorHandlers(), [observed]);

import { EventPositionText, PlantTag } from "@plantstore/schema";
import type Koa from "koa";
import type { Logger } from "pino";

import { readBearer } from "../auth/bearer.ts";
import { insufficientScopeChallenge } from "../auth/challenge.ts";
import type { Authenticator, Principal } from "../auth/principal.ts";
import type { ChangeFanout, Subscription } from "../changes/change-fanout.ts";
import { type Clock, every, systemClock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import type { Metrics } from "../metrics.ts";
import { addressGroup } from "../rate-limit/address-group.ts";
import type { ClientAddress } from "./client-address.ts";
import type { PlainPath } from "./plain-paths.ts";
import type { KernelSendBuffer } from "./send-buffer.ts";
import { HEARTBEAT_FRAME, positionFrame, resetFrame, RETRY_FRAME } from "./sse-frames.ts";
import { StreamLimits, type StreamLimitSettings } from "./stream-limits.ts";
import { strictQuery } from "./strict-query.ts";

export const PLANT_EVENTS_PATH = "/plants/events";

type EventStreamSettings = {
  /** A comment is written to every stream this often, so proxies and clients see it alive. */
  heartbeatMs: number;
  /**
   * A stream whose unsent bytes pass this after an event is closed there (a slow consumer),
   * counting what the kernel holds for it (`kernelSendBuffer`) with what the server does.
   */
  bufferLimitBytes: number;
  /** How often each stream's token is checked again (revoked, expired). */
  authCheckMs: number;
};

export type EventStreamsOptions = EventStreamSettings & {
  /** How many streams a token, a client address and the instance may hold. */
  limits: StreamLimitSettings;
  /** Where a request comes from, as the rest of the app tells it (trusted proxies). */
  clientAddress: ClientAddress;
  /** Caps and reads each stream's kernel send buffer; without it the limit counts the server's bytes alone. */
  kernelSendBuffer?: KernelSendBuffer | undefined;
  fanout: ChangeFanout;
  metrics: Metrics;
  authenticator: Authenticator;
  logger: Logger;
  clock?: Clock | undefined;
};

type Stream = {
  token: string;
  res: Koa.Context["res"];
  /** What the server may hold unsent for it: the limit less what its kernel buffer may hold. */
  unsentLimit: number;
  /** Reads what its kernel buffer holds, when that can be told. */
  kernelQueued: (() => number | undefined) | undefined;
  subscription: Subscription | undefined;
  end: (why: CloseReason) => void;
};

const READ_SCOPE = "plants:read";

type CloseReason = "client" | "slow_consumer" | "token" | "shutdown" | "read_failed";

function parsePosition(name: string, value: string | string[] | undefined): bigint | undefined {
  if (value === undefined) return undefined;
  const parsed = EventPositionText.safeParse(value);
  if (!parsed.success) throw new ApiError("INVALID_PARAMETER", `${name} ${parsed.error.issues[0]!.message}`);
  return parsed.data;
}

/**
 * The open streams of `GET /plants/events` on this instance: their heartbeats, the periodic check
 * of their tokens, and their end at shutdown. Events come from the instance's one ChangeFanout.
 */
export class EventStreams {
  readonly #options: EventStreamsOptions;
  readonly #streams = new Set<Stream>();
  readonly #stopTimers: Array<() => void>;
  readonly #limits: StreamLimits;
  #closing = false;

  constructor(options: EventStreamsOptions) {
    this.#options = options;
    this.#limits = new StreamLimits(options.limits);
    const clock = options.clock ?? systemClock;
    // One timer of a kind for all streams: a thousand open streams cost a thousand writes per tick, not a thousand timers.
    this.#stopTimers = [
      every(clock, options.heartbeatMs, () => {
        for (const stream of this.#streams) this.#write(stream, HEARTBEAT_FRAME);
      }),
      every(clock, options.authCheckMs, () => this.#checkTokens()),
    ];
  }

  get open(): number {
    return this.#streams.size;
  }

  /** The plain path the app serves the feed on; `authenticate` is the procedures' own (token, rate limit). */
  path(authenticate: (ctx: Koa.Context) => Promise<Principal>): PlainPath {
    return { path: PLANT_EVENTS_PATH, methods: ["GET", "HEAD"], handler: (ctx) => this.#serve(ctx, authenticate) };
  }

  /** Ends every stream after its last whole event, stops reading the log and refuses new streams (idempotent): the first step of a shutdown. */
  closeAll(): void {
    this.#closing = true;
    for (const stop of this.#stopTimers) stop();
    this.#options.fanout.stop();
    for (const stream of this.#streams) stream.end("shutdown");
  }

  async #serve(ctx: Koa.Context, authenticate: (ctx: Koa.Context) => Promise<Principal>): Promise<void> {
    const principal = await authenticate(ctx);
    if (!principal.scopes.includes(READ_SCOPE)) {
      throw new ApiError("INSUFFICIENT_SCOPE", `this operation needs the scope ${READ_SCOPE}`, {
        headers: { "WWW-Authenticate": insufficientScopeChallenge([READ_SCOPE]) },
      });
    }
    // The header wins over the query: it is what a reconnecting EventSource sends by itself.
    const fromHeader = parsePosition("Last-Event-ID", ctx.get("last-event-id") || undefined);
    const query = strictQuery(ctx);
    const fromQuery = parsePosition("after", query["after"]);
    const tagText = query["tag"];
    let tag: string | undefined;
    if (tagText !== undefined) {
      const parsed = PlantTag.safeParse(Array.isArray(tagText) ? undefined : tagText);
      if (!parsed.success)
        throw new ApiError("INVALID_PARAMETER", "tag must be a single plant tag (1 to 64 characters)");
      tag = parsed.data;
    }
    if (this.#closing) throw new ApiError("UNAVAILABLE", "the server is shutting down; reconnect to another instance");
    // Taken before anything is awaited, so streams opened at once cannot all pass the check; HEAD
    // is answered as GET would be and gives its place back at once.
    const givePlaceBack = this.#limits.take(
      `${principal.kind}:${principal.tokenId}`,
      addressGroup(this.#options.clientAddress(ctx.req)),
      (why) => this.#options.metrics.eventStreamsRefused.inc({ reason: why }),
    );
    try {
      await this.#stream(ctx, fromHeader ?? fromQuery, tag);
    } finally {
      givePlaceBack();
    }
  }

  async #stream(ctx: Koa.Context, resumeAfter: bigint | undefined, tag: string | undefined): Promise<void> {
    const start = await this.#options.fanout.startingPoint(resumeAfter);

    ctx.status = 200;
    ctx.set("Content-Type", "text/event-stream; charset=utf-8");
    // Neither a cache nor a buffering proxy (nginx honours X-Accel-Buffering) may hold events back.
    ctx.set("Cache-Control", "no-store");
    ctx.set("X-Accel-Buffering", "no");
    if (ctx.method === "HEAD") return;

    const token = (readBearer(ctx.get("authorization")) as { token: string }).token;
    const { res } = ctx;
    // Gone while the log was read: its "close" has passed, so nothing would ever end the stream.
    if (res.destroyed || ctx.req.socket.destroyed) return;
    ctx.respond = false;
    // The stream is idle between events by design: heartbeats show it alive, and the write-stall
    // watcher (connections.ts) still cuts a peer that stops taking bytes.
    ctx.req.socket.setTimeout(0);
    // The kernel would otherwise queue megabytes for a client that stops reading (its send buffer
    // grows by itself up to net.ipv4.tcp_wmem), unseen by writableLength: cap it at a quarter of
    // the limit, and count what it holds in the limit (#write).
    const { bufferLimitBytes, kernelSendBuffer } = this.#options;
    const { socket } = ctx.req;
    const kernelShare = Math.floor(bufferLimitBytes / 4);
    const capped = kernelSendBuffer?.cap(socket, kernelShare) ?? false;
    res.writeHead(200);
    res.write(RETRY_FRAME + (start.reset ? resetFrame(start.after) : positionFrame(start.after)));

    const ended = new Promise<void>((resolve) => res.once("close", resolve));
    const stream: Stream = {
      token,
      res,
      unsentLimit: capped ? bufferLimitBytes - kernelShare : bufferLimitBytes,
      kernelQueued: capped ? () => kernelSendBuffer?.queued(socket) : undefined,
      subscription: undefined,
      end: (why) => {
        if (!this.#streams.delete(stream)) return;
        stream.subscription?.close();
        this.#options.metrics.eventStreams.set(this.#streams.size);
        this.#options.metrics.eventStreamsClosed.inc({ reason: why });
        if (why !== "client") this.#options.logger.debug({ why }, "event stream closed by the server");
        res.end();
      },
    };
    this.#streams.add(stream);
    this.#options.metrics.eventStreams.set(this.#streams.size);
    res.once("close", () => stream.end("client"));
    const drained = () =>
      res.writableNeedDrain && !res.destroyed
        ? new Promise<void>((resolve) => {
            const done = () => {
              res.off("drain", done).off("close", done);
              resolve();
            };
            res.on("drain", done).on("close", done);
          })
        : Promise.resolve();
    stream.subscription = this.#options.fanout.subscribe(
      { tag, write: (text) => this.#write(stream, text), drained },
      start.after,
    );
    stream.subscription.live.catch((error: unknown) => {
      this.#options.logger.warn({ err: error }, "reading the change log for a stream failed");
      stream.end("read_failed");
    });
    await ended;
  }

  #write(stream: Stream, text: string): void {
    if (!this.#streams.has(stream)) return;
    const backlog = stream.res.writableLength;
    stream.res.write(text);
    // Checked after a whole write, so the stream ends after its last whole event and the client resumes from it.
    const unsent = stream.res.writableLength;
    // While nothing backs up, the kernel takes every write and holds at most its cap (and the one
    // packet it may take beyond it). Once writes back up its buffer is full: what it holds is read
    // where that can be done, and counted with the server's bytes.
    const queued = backlog > 0 ? stream.kernelQueued?.() : 0;
    if (queued === undefined ? unsent > stream.unsentLimit : unsent + queued > this.#options.bufferLimitBytes) {
      stream.end("slow_consumer");
    }
  }

  /** One check per distinct token, however many streams share it. */
  async #checkTokens(): Promise<void> {
    const byToken = new Map<string, Stream[]>();
    for (const stream of this.#streams) {
      const streams = byToken.get(stream.token);
      if (streams === undefined) byToken.set(stream.token, [stream]);
      else streams.push(stream);
    }
    await Promise.all(
      [...byToken].map(async ([token, streams]) => {
        let principal: Principal | undefined;
        try {
          principal = await this.#options.authenticator.authenticate(token);
        } catch {
          // The token store cannot be asked right now: an outage is no reason to cut listeners off.
          return;
        }
        if (principal === undefined || !principal.scopes.includes(READ_SCOPE)) {
          for (const stream of streams) stream.end("token");
        }
      }),
    );
  }
}

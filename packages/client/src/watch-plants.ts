import { Int64, PlantTag } from "@plantstore/schema";

import { throwErrorResponse } from "./error-response.ts";
import type { PlantStoreError } from "./errors.ts";
import { PlantStoreInputError, PlantStoreProtocolError, PlantStoreRateLimitError } from "./errors.ts";
import { createEventStreamParser } from "./event-stream-parser.ts";
import { toPlantId } from "./plant-id.ts";
import { DEFAULT_MAX_RECONNECT_MS, DEFAULT_RECONNECT_MS, reconnectDelay } from "./reconnect-delay.ts";
import type { Connection } from "./send-request.ts";
import { parsePosition, toWatchPlantsEvent, type WatchPlantsEvent } from "./watch-plants-event.ts";

/** Three heartbeats of the server's default 15 s interval: a connection that silent is dead. */
const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

/** Answers that may be better on another attempt; every other error status is final. */
const RETRIED_STATUSES = new Set([429, 500, 502, 503, 504]);

export type WatchPlantsOptions = {
  /**
   * Resume after this position (an event's `position`, or a reset's): the feed sends every change
   * committed after it. Without it the feed starts with the changes committed after it connects.
   */
  after?: bigint | number;
  /** Only changes to plants whose tag is, or was until the change, exactly this one. */
  tag?: string;
  /** Aborting ends the iteration (without an error) and closes the connection. */
  signal?: AbortSignal;
  /** The longest wait between two connection attempts, in ms (default 30 s); it wins over the server's `retry:` hint. */
  maxReconnectDelayMs?: number;
  /** A connection that receives nothing for this long (ms, default 45 s) is taken for lost and reopened. */
  idleTimeoutMs?: number;
  /** Called before each wait to reconnect: why the connection was lost and when the next attempt is. */
  onReconnect?: (reconnect: Reconnect) => void;
  /**
   * Called on each connection, once the stream has said where it starts and before any of its
   * events: from here on, every change arrives. Whether it resumed, started fresh or was reset.
   */
  onOpen?: (open: StreamOpen) => void;
};

export type StreamOpen = {
  /** 1 for the first connection; each reconnection counts one more. */
  connection: number;
  /**
   * `resumed`: right after the position asked for (`after`, then the last one seen), so no change
   * was missed. `fresh`: no position was asked for, so it starts with the changes committed after
   * it opened, and those before are not sent. `reset`: the server no longer has (or never had) the
   * position asked for; changes may have been missed, and a `reset` event comes next.
   */
  start: "resumed" | "fresh" | "reset";
  /** The position the stream starts after: its next change is the one after it. */
  position: bigint;
};

export type Reconnect = {
  /** 1 for the first attempt after a connection was lost; counts up while attempts fail. */
  attempt: number;
  /** How long the client waits before this attempt, in ms. */
  delayMs: number;
  /** The position the attempt resumes after (`Last-Event-ID`), or undefined when none is known yet. */
  after: bigint | undefined;
  /** Why: a PlantStoreProtocolError (network failure, the stream ended or went silent) or a PlantStoreError (429, 5xx). */
  cause: Error;
};

type Watch = {
  after: bigint | undefined;
  tag: string | undefined;
  signal: AbortSignal | undefined;
  maxReconnectDelayMs: number;
  idleTimeoutMs: number;
  onReconnect: ((reconnect: Reconnect) => void) | undefined;
  onOpen: ((open: StreamOpen) => void) | undefined;
};

const refuse = (path: string, message: string): never => {
  throw new PlantStoreInputError([{ path, message }], "watch options");
};

function toWatch(options: WatchPlantsOptions): Watch {
  if (typeof options !== "object" || options === null) refuse("", "watch options must be an object");
  let after: bigint | undefined;
  if (options.after !== undefined) {
    const parsed = Int64.safeParse(toPlantId(options.after, "after", "watch options"));
    if (!parsed.success || parsed.data < 0n) refuse("after", "must be a position: an integer from 0 to 2^63 - 1");
    after = parsed.data;
  }
  if (options.tag !== undefined) {
    const parsed = PlantTag.safeParse(options.tag);
    if (!parsed.success) refuse("tag", parsed.error.issues[0]?.message ?? "is not a tag");
  }
  const positive = (value: number | undefined, path: string, fallback: number) => {
    if (value === undefined) return fallback;
    if (!Number.isFinite(value) || value <= 0) refuse(path, "must be a positive number of milliseconds");
    return value;
  };
  return {
    after,
    tag: options.tag,
    signal: options.signal,
    maxReconnectDelayMs: positive(options.maxReconnectDelayMs, "maxReconnectDelayMs", DEFAULT_MAX_RECONNECT_MS),
    idleTimeoutMs: positive(options.idleTimeoutMs, "idleTimeoutMs", DEFAULT_IDLE_TIMEOUT_MS),
    onReconnect: options.onReconnect,
    onOpen: options.onOpen,
  };
}

/** Resolves after `ms`, or as soon as `signal` aborts; never rejects. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Why one connection ended without an error that ends the iteration. */
type Lost = { cause: Error; retryAfterMs?: number };

class IdleTimeout extends Error {}

/**
 * `GET /plants/events` as an async iterator of typed events, over `fetch` streaming (so the bearer
 * token goes in the header, in Node and in browsers alike). Options are checked at once: a bad
 * one throws PlantStoreInputError from this call, before any request.
 */
export function watchPlants(
  connection: Connection,
  options: WatchPlantsOptions,
): AsyncGenerator<WatchPlantsEvent, void> {
  return events(connection, toWatch(options));
}

/** What survives from one connection to the next. */
type Progress = {
  /**
   * The WHATWG "last event ID string": an event's id, or the id of a data-less one (a reset's, or
   * one a server sends to say where a fresh stream starts). What a reconnection resumes after.
   */
  lastEventId: string;
  /** The server's last `retry:` hint. */
  retryHintMs: number;
  /** Failed attempts since a connection last opened. */
  attempt: number;
  /** Connections whose answer opened a stream. */
  connections: number;
};

/**
 * Reconnects after a lost connection, a silent one, a 429 or a 5xx, with `Last-Event-ID` set to
 * the last position seen, so no change is missed or repeated. 400, 401, 403 and every other error
 * status end the iteration with the typed error, since another attempt would be refused alike.
 */
async function* events(connection: Connection, watch: Watch): AsyncGenerator<WatchPlantsEvent, void> {
  const { signal } = watch;
  const query = watch.tag === undefined ? "" : `?${new URLSearchParams({ tag: watch.tag }).toString()}`;
  const url = `${connection.url("/plants/events")}${query}`;
  const progress: Progress = {
    lastEventId: watch.after === undefined ? "" : watch.after.toString(),
    retryHintMs: DEFAULT_RECONNECT_MS,
    attempt: 0,
    connections: 0,
  };
  // A function, not a narrowed expression: the signal may abort during any await below.
  const aborted = () => signal?.aborted === true;
  while (!aborted()) {
    const stop = new AbortController();
    let lost: Lost | undefined;
    try {
      lost = yield* streamOnce(connection, url, watch, progress, stop);
    } finally {
      // Also runs when the caller breaks out of its loop at a `yield`: the connection closes.
      stop.abort();
    }
    if (lost === undefined || aborted()) return;
    progress.attempt += 1;
    const delayMs = Math.max(
      reconnectDelay(progress.attempt, progress.retryHintMs, watch.maxReconnectDelayMs, Math.random),
      lost.retryAfterMs ?? 0,
    );
    watch.onReconnect?.({
      attempt: progress.attempt,
      delayMs,
      after: parsePosition(progress.lastEventId),
      cause: lost.cause,
    });
    await pause(delayMs, signal);
  }
}

/**
 * One connection: yields its events until it is lost (returns why) or the caller aborts (returns
 * undefined). `stop` aborts the request; the caller aborts it once this returns or is returned.
 */
async function* streamOnce(
  connection: Connection,
  url: string,
  watch: Watch,
  progress: Progress,
  stop: AbortController,
): AsyncGenerator<WatchPlantsEvent, Lost | undefined> {
  const { signal } = watch;
  const connectionSignal = signal === undefined ? stop.signal : AbortSignal.any([signal, stop.signal]);
  const headers: Record<string, string> = { Accept: "text/event-stream" };
  if (progress.lastEventId !== "") headers["Last-Event-ID"] = progress.lastEventId;
  // Armed before the request: a connection can also go silent before the answer's headers.
  let idle: ReturnType<typeof setTimeout> | undefined;
  const armIdleTimer = () => {
    clearTimeout(idle);
    idle = setTimeout(() => stop.abort(new IdleTimeout()), watch.idleTimeoutMs);
  };
  const silent = () =>
    stop.signal.reason instanceof IdleTimeout
      ? { cause: new PlantStoreProtocolError(`the event stream sent nothing for ${watch.idleTimeoutMs} ms`) }
      : undefined;
  try {
    armIdleTimer();
    let response: Response;
    try {
      response = await connection.send(url, { method: "GET", headers, signal: connectionSignal });
    } catch (error) {
      if (signal?.aborted === true) return undefined;
      if (error instanceof PlantStoreProtocolError) return { cause: error };
      const timedOut = silent();
      if (timedOut !== undefined) return timedOut;
      throw error;
    }
    const refused = await refusal(response);
    if (refused !== undefined) return refused;
    progress.attempt = 0;
    progress.connections += 1;

    // The server opens every stream with where it starts: a data-less `id:` (the position asked
    // for, or its head when none was), or a `reset` event. An event first (a server that sends no
    // such line) says it as well.
    const resuming = progress.lastEventId !== "";
    let announced = false;
    const announce = (lastEventId: string, reset: boolean) => {
      const position = parsePosition(lastEventId);
      if (announced || position === undefined) return;
      announced = true;
      const start = reset ? "reset" : resuming ? "resumed" : "fresh";
      watch.onOpen?.({ connection: progress.connections, start, position });
    };
    const parser = createEventStreamParser(progress.lastEventId);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      armIdleTimer();
      let chunk: ReadableStreamReadResult<string>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (signal?.aborted === true) return undefined;
        return (
          silent() ?? {
            cause: new PlantStoreProtocolError("the event stream broke off", { status: 200, cause: error }),
          }
        );
      }
      if (chunk.done)
        return { cause: new PlantStoreProtocolError("the server ended the event stream", { status: 200 }) };
      // Time the caller spends on an event is not the connection's silence.
      clearTimeout(idle);
      for (const item of parser.push(chunk.value)) {
        if (item.kind === "retry") {
          progress.retryHintMs = item.milliseconds;
          continue;
        }
        if (item.kind === "id") {
          announce(item.lastEventId, false);
          continue;
        }
        announce(item.event.lastEventId, item.event.type === "reset");
        const event = toWatchPlantsEvent(item.event);
        if (event !== undefined) yield event;
      }
      progress.lastEventId = parser.lastEventId;
    }
  } finally {
    clearTimeout(idle);
  }
}

/**
 * Undefined for an answer that opens the stream; what was lost for one worth another attempt;
 * throws the typed error of any other.
 */
async function refusal(response: Response): Promise<Lost | undefined> {
  const { status } = response;
  if (status === 200) {
    const type = response.headers.get("content-type") ?? "";
    if (!/^text\/event-stream\s*(;|$)/i.test(type) || response.body === null) {
      await response.body?.cancel();
      throw new PlantStoreProtocolError(`HTTP 200: expected a text/event-stream, got ${JSON.stringify(type)}`, {
        status,
      });
    }
    return undefined;
  }
  if (!RETRIED_STATUSES.has(status)) return throwErrorResponse(response);
  // A proxy's HTML 502 is no Error body: it is retried all the same, with a protocol error as the cause.
  const cause = await throwErrorResponse(response).catch((error: PlantStoreError | PlantStoreProtocolError) => error);
  const retryAfter = cause instanceof PlantStoreRateLimitError ? cause.retryAfter : retryAfterOf(response);
  return {
    cause,
    ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter * 1000 }),
  };
}

/** `Retry-After` in delay-seconds (a 503's); an HTTP-date one is left to the backoff. */
function retryAfterOf(response: Response): number | undefined {
  const value = response.headers.get("retry-after")?.trim();
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}

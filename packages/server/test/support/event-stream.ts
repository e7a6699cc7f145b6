import { type Agent, request } from "node:http";
import type { Socket } from "node:net";

/** One server-sent event as a client's parser hands it over. */
export type ReceivedEvent = { id: string; event: string; data: string };

export type EventStreamClient = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Whole events, in arrival order. */
  events: ReceivedEvent[];
  /** Comment lines, without their colon. */
  comments: string[];
  /** The `retry:` hints. */
  retries: number[];
  /** The last event id as a browser's EventSource keeps it: set at each blank line, with or without data. */
  lastEventId(): string;
  /** Every byte received, as text. */
  text(): string;
  /** Resolves when the stream ends: `complete` when the server ended it properly (chunked encoding closed). */
  ended: Promise<{ complete: boolean }>;
  /** Stops reading (the kernel buffers fill, then the server's), or reads again. */
  pause(): void;
  resume(): void;
  close(): void;
  [Symbol.dispose](): void;
};

export type OpenOptions = {
  token: string;
  lastEventId?: string;
  /** The query string, without `?`. */
  query?: string;
  /** More request headers (an `X-Forwarded-For`, say). */
  headers?: Record<string, string>;
  agent?: Agent;
  /** Called with the client's socket once it is connected, before the request is sent. */
  onConnect?: (socket: Socket) => void;
};

/**
 * `GET /plants/events` over node:http, parsed as the SSE specification says (fields per line, an
 * event per blank line, `:` comments). Rejects unless the answer is a 200 stream: refusals are
 * checked with `send`, against the documents.
 */
export function openEventStream(baseUrl: string, options: OpenOptions): Promise<EventStreamClient> {
  const url = new URL(`/plants/events${options.query === undefined ? "" : `?${options.query}`}`, baseUrl);
  const headers: Record<string, string> = {
    authorization: `Bearer ${options.token}`,
    accept: "text/event-stream",
    ...options.headers,
  };
  if (options.lastEventId !== undefined) headers["last-event-id"] = options.lastEventId;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: options.agent ?? false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${url.pathname}${url.search} answered ${res.statusCode}`));
        return;
      }
      const events: ReceivedEvent[] = [];
      const comments: string[] = [];
      const retries: number[] = [];
      let all = "";
      let pending = "";
      let fields: Partial<ReceivedEvent> & { data?: string } = {};
      let idBuffer = "";
      let lastEventId = "";
      const line = (text: string) => {
        if (text === "") {
          lastEventId = idBuffer;
          if (fields.data !== undefined)
            events.push({ id: fields.id ?? "", event: fields.event ?? "message", data: fields.data });
          fields = {};
          return;
        }
        if (text.startsWith(":")) {
          comments.push(text.slice(1).trim());
          return;
        }
        const colon = text.indexOf(":");
        const name = colon === -1 ? text : text.slice(0, colon);
        const value = colon === -1 ? "" : text.slice(colon + 1).replace(/^ /, "");
        if (name === "id") fields.id = idBuffer = value;
        else if (name === "event") fields.event = value;
        else if (name === "data") fields.data = fields.data === undefined ? value : `${fields.data}\n${value}`;
        else if (name === "retry") retries.push(Number(value));
      };
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        all += chunk;
        pending += chunk;
        let at: number;
        while ((at = pending.indexOf("\n")) !== -1) {
          line(pending.slice(0, at));
          pending = pending.slice(at + 1);
        }
      });
      const ended = new Promise<{ complete: boolean }>((done) => {
        res.on("error", () => undefined);
        res.once("close", () => done({ complete: res.complete }));
      });
      resolve({
        status: res.statusCode,
        headers: res.headers,
        events,
        comments,
        retries,
        lastEventId: () => lastEventId,
        text: () => all,
        ended,
        pause: () => res.pause(),
        resume: () => res.resume(),
        close: () => req.destroy(),
        [Symbol.dispose]: () => req.destroy(),
      });
    });
    req.on("error", reject);
    const { onConnect } = options;
    if (onConnect !== undefined)
      req.once("socket", (socket: Socket) => socket.once("connect", () => onConnect(socket)));
    req.end();
  });
}

/** The event ids as numbers (they are small in tests), for comparisons. */
export const positions = (events: readonly ReceivedEvent[]): number[] => events.map((event) => Number(event.id));

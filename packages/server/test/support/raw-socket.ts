import { connect, type Socket } from "node:net";
// eslint-disable-next-line no-restricted-imports -- the pace of a slow client is what trickle() is for
import { setTimeout as sleep } from "node:timers/promises";

import { checkErrorAnswer } from "./harness.ts";

export type RawAnswer = { status: number; headers: Record<string, string>; body: string };

/**
 * Parses every complete HTTP/1.1 answer in `raw` (Content-Length framed, as this server sends).
 * Answers to HEAD carry no body whatever their Content-Length says. Every 4xx and 5xx answer is
 * checked against the documents' Error rule (throws if it breaks it): the request behind a raw
 * answer may not even parse, so the rule that holds whatever the request is the one checked.
 */
export function parseAnswers(raw: string, options: { head?: boolean } = {}): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = Buffer.from(raw, "latin1");
  for (;;) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) return answers;
    const [statusLine = "", ...lines] = rest.subarray(0, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = options.head ? 0 : Number(headers["content-length"] ?? 0);
    if (rest.length < end + 4 + length) return answers;
    const answer = {
      status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]),
      headers,
      body: rest.subarray(end + 4, end + 4 + length).toString("utf8"),
    };
    if (!options.head) checkErrorAnswer(answer.status, headers["content-type"], answer.body);
    answers.push(answer);
    rest = rest.subarray(end + 4 + length);
  }
}

/** A client connection that records every byte it gets and how it ended. */
export type RawClient = {
  socket: Socket;
  write(data: string | Buffer): void;
  /** Everything received so far, as latin1 (byte-exact). */
  received(): string;
  answers(options?: { head?: boolean }): RawAnswer[];
  /** Resolves when the connection is closed, with the error code if it was reset. */
  closed: Promise<{ error: string | undefined }>;
};

export async function openRaw(port: number): Promise<RawClient> {
  const socket = connect(port, "127.0.0.1");
  let received = Buffer.alloc(0);
  let error: string | undefined;
  socket.on("data", (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
  socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
  const closed = new Promise<{ error: string | undefined }>((resolve) =>
    socket.once("close", () => resolve({ error })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  return {
    socket,
    write: (data) => {
      if (!socket.destroyed) socket.write(data);
    },
    received: () => received.toString("latin1"),
    answers: (options) => parseAnswers(received.toString("latin1"), options),
    closed,
  };
}

/** The head of a POST /plants with `token`, for a body of `length` bytes. */
export function postHead(token: string, length: number, extra = ""): string {
  return (
    "POST /plants HTTP/1.1\r\nHost: plantstore\r\nContent-Type: application/json\r\n" +
    `Authorization: Bearer ${token}\r\nContent-Length: ${length}\r\n${extra}\r\n`
  );
}

/** Writes `text` one byte at a time, `gapMs` apart, until done or the server closes the connection. */
export function trickle(client: RawClient, text: string, gapMs: number): void {
  void (async () => {
    for (const byte of text) {
      if (client.socket.destroyed || client.socket.writableEnded) return;
      client.write(byte);
      await sleep(gapMs);
    }
  })();
}

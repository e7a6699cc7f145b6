import type { Socket } from "node:net";

import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { openRaw, type RawAnswer, type RawClient } from "../support/raw-socket.ts";

const BODY_LIMIT = 1024;
const TEN_GB = 10_000_000_000;
const MB = 1_000_000;

let server: TestServer;
/** The server's side of each connection, by the client's port, to read how much it took in. */
const serverSockets = new Map<number, Socket>();
beforeAll(async () => {
  server = await startTestServer({ bodyLimitBytes: BODY_LIMIT });
  server.server.on("connection", (socket: Socket) => serverSockets.set(socket.remotePort!, socket));
});
afterAll(async () => {
  await server.close();
});

type Blast = {
  client: RawClient;
  /** When the first final (non-1xx) answer was complete. */
  answeredAt: number;
  closedAt: number;
  /** Body bytes the server read off the connection (its socket's bytesRead, less the head). */
  serverRead: number;
};

/**
 * Sends `head`, then body bytes as fast as the connection takes them (a Content-Length body, or
 * chunks of a chunked one) until the server closes it or `limitBytes` went out.
 */
async function blast(head: string, options: { chunked: boolean; limitBytes: number }): Promise<Blast> {
  const client = await openRaw(server.port);
  // Read now: a closed socket has no port.
  const port = client.socket.localPort!;
  const payload = Buffer.alloc(64 * 1024, "7");
  const piece = options.chunked
    ? Buffer.concat([Buffer.from(`${payload.length.toString(16)}\r\n`), payload, Buffer.from("\r\n")])
    : payload;
  let answeredAt = 0;
  client.socket.on("data", () => {
    if (answeredAt === 0 && client.answers().some((a) => a.status >= 200)) answeredAt = Date.now();
  });
  let closedAt = 0;
  void client.closed.then(() => (closedAt = Date.now()));
  client.write(head);
  let sent = 0;
  while (sent < options.limitBytes && !client.socket.destroyed && closedAt === 0) {
    sent += piece.length;
    if (!client.socket.write(piece)) {
      await new Promise<void>((resolve) => {
        client.socket.once("drain", resolve);
        client.socket.once("close", resolve);
      });
    }
  }
  await client.closed;
  const serverSocket = serverSockets.get(port);
  return {
    client,
    answeredAt,
    closedAt,
    serverRead: (serverSocket?.bytesRead ?? Number.NaN) - Buffer.byteLength(head),
  };
}

function finalAnswer(client: RawClient): RawAnswer {
  const answers = client.answers();
  expect(answers.length).toBeGreaterThan(0);
  return answers.find((a) => a.status >= 200)!;
}

function headOf(lines: string[]): string {
  return ["POST /plants HTTP/1.1", "Host: plantstore", "Content-Type: application/json", ...lines, "", ""].join("\r\n");
}

describe("a refused request's body is not read: the connection closes once the answer is out", () => {
  it.each([
    ["an unauthenticated POST /plants with a 10 GB Content-Length", [`Content-Length: ${TEN_GB}`], false, 401],
    ["an unauthenticated chunked POST /plants", ["Transfer-Encoding: chunked"], true, 401],
    [
      "a POST /plants whose Content-Length is over the limit",
      [`Authorization: Bearer ${TOKEN}`, `Content-Length: ${TEN_GB}`],
      false,
      413,
    ],
    [
      "a chunked POST /plants that grows past the limit",
      [`Authorization: Bearer ${TOKEN}`, "Transfer-Encoding: chunked"],
      true,
      413,
    ],
  ])("closes %s within 1 s of its %i, having read < 1 MB", async (_, lines, chunked, status) => {
    const { client, answeredAt, closedAt, serverRead } = await blast(headOf(lines), { chunked, limitBytes: TEN_GB });
    const answer = finalAnswer(client);
    expect(answer.status).toBe(status);
    expect(closedAt - answeredAt).toBeLessThan(1_000);
    expect(serverRead).toBeLessThan(MB);
    expect(answer.headers["connection"]).toBe("close");
  });

  it.each([
    ["404 for a path that is not an operation", "POST /nope HTTP/1.1", [`Authorization: Bearer ${TOKEN}`], 404],
    ["405 for a method the path does not answer", "POST /healthz HTTP/1.1", [], 405],
    [
      "415 for a body that is not JSON",
      "POST /plants HTTP/1.1",
      [`Authorization: Bearer ${TOKEN}`, "Content-Type: text/plain"],
      415,
    ],
  ])("closes after a %s, without reading the body", async (_, requestLine, lines, status) => {
    const head = [requestLine, "Host: plantstore", ...lines, `Content-Length: ${TEN_GB}`, "", ""].join("\r\n");
    const { client, answeredAt, closedAt, serverRead } = await blast(head, { chunked: false, limitBytes: TEN_GB });
    expect(closedAt - answeredAt).toBeLessThan(1_000);
    expect(serverRead).toBeLessThan(MB);
    expect(finalAnswer(client)).toMatchObject({ status, headers: { connection: "close" } });
  });

  it("keeps the connection open after an answer to a request whose body was read", async () => {
    const body = '{"id":8101,"name":"kept"}';
    const client = await openRaw(server.port);
    const request = headOf([`Authorization: Bearer ${TOKEN}`, `Content-Length: ${body.length}`]) + body;
    client.write(request + request.replace('"id":8101', '"id":8102'));
    await eventually(() => client.answers().length === 2, {
      what: () => `two answers on one connection (${client.received()})`,
      timeoutMs: 5_000,
    });
    expect(client.answers().map((a) => [a.status, a.headers["connection"]])).toEqual([
      [200, "keep-alive"],
      [200, "keep-alive"],
    ]);
    expect(client.socket.destroyed).toBe(false);
    client.socket.destroy();
  });
});

describe("Expect: 100-continue", () => {
  /** Sends only the head and waits for what the server says before any body byte. */
  async function headOnly(head: string, until: (answers: RawAnswer[]) => boolean): Promise<RawClient> {
    const client = await openRaw(server.port);
    client.write(head);
    await eventually(() => until(client.answers()), {
      what: () => `an answer to the head alone (${JSON.stringify(client.received())})`,
      timeoutMs: 5_000,
    });
    return client;
  }

  it("answers 401 without a 100 Continue first when the token is missing", async () => {
    const client = await headOnly(headOf(["Expect: 100-continue", "Content-Length: 1000"]), (answers) =>
      answers.some((a) => a.status >= 200),
    );
    const [answer, ...rest] = client.answers();
    expect(rest).toEqual([]);
    expectErrorShape({ ...answer!, json: JSON.parse(answer!.body), text: answer!.body }, 401, 40100);
    expect(answer!.headers["connection"]).toBe("close");
    await client.closed;
  });

  it("answers 413 without a 100 Continue first when the length is over the limit", async () => {
    const client = await headOnly(
      headOf([`Authorization: Bearer ${TOKEN}`, "Expect: 100-continue", `Content-Length: ${BODY_LIMIT + 1}`]),
      (answers) => answers.some((a) => a.status >= 200),
    );
    const [answer, ...rest] = client.answers();
    expect(rest).toEqual([]);
    expect(answer!.status).toBe(413);
    await client.closed;
  });

  it("sends 100 Continue for a valid token and an acceptable length, then 200 for the body", async () => {
    const body = '{"id":8103,"name":"continued"}';
    const client = await headOnly(
      headOf([`Authorization: Bearer ${TOKEN}`, "Expect: 100-continue", `Content-Length: ${body.length}`]),
      (answers) => answers.length > 0,
    );
    expect(client.answers()).toMatchObject([{ status: 100 }]);
    client.write(body);
    await eventually(() => client.answers().length === 2, {
      what: () => `the final answer (${client.received()})`,
      timeoutMs: 5_000,
    });
    expect(client.answers()[1]).toMatchObject({ status: 200, body: '{"name":"continued"}' });
    expect(await server.store.get(8103n)).toEqual({ id: 8103n, name: "continued" });
    client.socket.destroy();
  });
});

import { connect } from "node:net";

import { describe, expect, it } from "vitest";

import { checkErrorAnswer, startTestServer, TOKEN } from "../support/harness.ts";

/** Writes raw bytes on a TCP connection and returns everything the server sends back. */
function exchange(port: number, chunks: string[], gapMs = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (d) => (received += d.toString()));
    socket.on("end", () => resolve(received));
    socket.on("close", () => resolve(received));
    socket.on("error", reject);
    void (async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) return;
        socket.write(chunk);
        // eslint-disable-next-line no-restricted-syntax -- the pace at which the client sends its request is what the test is about
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    })();
  });
}

/**
 * Writes each piece as its own TCP segment (no Nagle, the next written once the last is flushed),
 * so the server usually reads them apart; the answer expected is the same if it does not.
 */
function exchangePieces(port: number, pieces: string[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.setNoDelay(true);
    let received = "";
    socket.on("data", (d) => (received += d.toString()));
    socket.on("close", () => resolve(received));
    // The server may answer and close before the last piece is written: what it sent is the result.
    socket.on("error", () => resolve(received));
    const writeFrom = (index: number): void => {
      if (index >= pieces.length || socket.destroyed) return;
      socket.write(pieces[index]!, () => writeFrom(index + 1));
    };
    socket.once("connect", () => writeFrom(0));
  });
}

/** The one answer in `raw`, checked against the documents' Error rule (Node writes these before the app runs). */
function errorOf(raw: string): { status: number; body: unknown; contentType: string | undefined } {
  const [head = "", body = ""] = raw.split("\r\n\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  const contentType = /content-type: ([^\r\n]+)/i.exec(head)?.[1];
  checkErrorAnswer(status, contentType, body);
  return { status, body: JSON.parse(body), contentType };
}

describe("requests Koa never sees", () => {
  it("answers malformed HTTP with 400 and an Error body", async () => {
    await using server = await startTestServer();
    const raw = await exchange(server.port, ["THIS IS NOT HTTP\r\n\r\n"]);
    const { status, body, contentType } = errorOf(raw);
    expect(status).toBe(400);
    expect(contentType).toMatch(/^application\/json/);
    expect(body).toEqual({ error: 40000, message: expect.any(String) });
  });

  it("answers oversize headers with 431 and an Error body", async () => {
    await using server = await startTestServer();
    const raw = await exchange(server.port, [
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
    ]);
    const { status, body } = errorOf(raw);
    expect(status).toBe(431);
    expect(body).toEqual({ error: 43100, message: expect.any(String) });
  });

  it("answers GET /plants with oversize headers with 431, which the operation declares", async () => {
    await using server = await startTestServer();
    const raw = await exchange(server.port, [
      `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
    ]);
    const { status, body } = errorOf(raw);
    expect(status).toBe(431);
    expect(server.served.paths["/plants"]?.["get"]?.responses["431"]).toEqual({
      $ref: "#/components/responses/RequestHeaderFieldsTooLarge",
    });
    expect(body).toEqual({ error: 43100, message: expect.any(String) });
  });

  it("answers an over-long path with 414 and an Error body (RFC 9110 §15.5.15), which every operation declares", async () => {
    await using server = await startTestServer();
    const raw = await exchange(server.port, [
      `DELETE /plants/${"1".repeat(20_000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`,
    ]);
    const { status, body } = errorOf(raw);
    expect(status).toBe(414);
    expect(body).toEqual({ error: 41400, message: expect.any(String) });
    expect(server.served.paths["/plants/{id}"]?.["delete"]?.responses["414"]).toEqual({
      $ref: "#/components/responses/UriTooLong",
    });
  });

  it("answers an over-long query with 414, whether the target arrives in one piece or ends in a later one", async () => {
    await using server = await startTestServer();
    const query = `/plants?tag=${"t".repeat(20_000)}`;
    for (const chunks of [
      [`GET ${query} HTTP/1.1\r\nHost: x\r\n\r\n`],
      // The first piece alone passes the limit, mid-target; the second piece ends it.
      [`GET ${query}`, " HTTP/1.1\r\nHost: x\r\n\r\n"],
      // Each piece is under the limit; the target crosses it where it ends.
      [`GET ${query.slice(0, 10_000)}`, `${query.slice(10_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
      // Behind an answered request on the same connection.
      [`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET ${query} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ]) {
      const raw = await exchangePieces(server.port, chunks);
      const last = raw.slice(raw.lastIndexOf("HTTP/1.1 "));
      const { status, body } = errorOf(last);
      expect(status, chunks.join("").slice(0, 40)).toBe(414);
      expect(body).toEqual({ error: 41400, message: expect.any(String) });
    }
  });

  it("still answers 431, not 414, when a short request line is followed by a huge header, in one piece or two", async () => {
    await using server = await startTestServer();
    for (const chunks of [
      [`GET /plants?limit=1 HTTP/1.1\r\nHost: x\r\nX-Big: ${"a b ".repeat(5_000)}\r\n\r\n`],
      [`GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(10_000)}`, `${"a".repeat(10_000)}\r\n\r\n`],
      [`GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(10_000)}`, `GET /${"a".repeat(10_000)}\r\n\r\n`],
    ]) {
      const { status, body } = errorOf(await exchangePieces(server.port, chunks));
      expect(status).toBe(431);
      expect(body).toEqual({ error: 43100, message: expect.any(String) });
    }
  });

  it("answers a body that trickles in past the request timeout with 408 and an Error body", async () => {
    await using server = await startTestServer({ headersTimeoutMs: 300, requestTimeoutMs: 600 });
    const head =
      "POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
      `Authorization: Bearer ${TOKEN}\r\nContent-Length: 40\r\n\r\n`;
    const started = Date.now();
    const raw = await exchange(server.port, [head, '{"id":1,', '"name":', '"slow"'], 400);
    const { status, body } = errorOf(raw);
    expect(status).toBe(408);
    expect(body).toEqual({ error: 40800, message: expect.any(String) });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

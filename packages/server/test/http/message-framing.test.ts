import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import { startTestServer } from "../support/harness.ts";
import { openRaw, type RawClient } from "../support/raw-socket.ts";

/** Waits until the server closed `client` or sent it `count` answers, whichever comes first. */
async function closedOrAnswered(client: RawClient, count: number): Promise<{ closed: boolean }> {
  let closed = false;
  void client.closed.then(() => (closed = true));
  await eventually(() => closed || client.answers().length >= count, {
    what: () => `the connection to close or ${count} answers (got ${client.answers().length})`,
  });
  return { closed };
}

describe("HTTP/1.1 message framing (RFC 9112)", () => {
  it("closes the connection after answering an HTTP/1.0 request with Transfer-Encoding, so a request pipelined behind it is not read (§6.1)", async () => {
    await using server = await startTestServer();
    const client = await openRaw(server.port);
    client.write(
      "GET /healthz HTTP/1.0\r\nHost: plantstore\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
        "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n",
    );
    const { closed } = await closedOrAnswered(client, 2);
    expect(closed).toBe(true);
    const answers = client.answers();
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ status: 200, headers: { connection: "close" } });
  });

  it("keeps an HTTP/1.0 keep-alive connection without Transfer-Encoding open for the next request", async () => {
    await using server = await startTestServer();
    const client = await openRaw(server.port);
    client.write(
      "GET /healthz HTTP/1.0\r\nHost: plantstore\r\nConnection: keep-alive\r\n\r\n" +
        "GET /healthz HTTP/1.1\r\nHost: plantstore\r\nConnection: close\r\n\r\n",
    );
    await client.closed;
    expect(client.answers().map((answer) => answer.status)).toEqual([200, 200]);
  });

  it("answers a request with two Host header lines with 400 and an Error body, and closes (§3.2)", async () => {
    await using server = await startTestServer();
    const client = await openRaw(server.port);
    client.write(
      "GET /healthz HTTP/1.1\r\nHost: plantstore\r\nHost: elsewhere\r\n\r\n" +
        "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n",
    );
    const { closed } = await closedOrAnswered(client, 2);
    expect(closed).toBe(true);
    const answers = client.answers();
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ status: 400, headers: { connection: "close" } });
    expect(JSON.parse(answers[0]!.body)).toEqual({ error: 40000, message: expect.stringMatching(/Host/) });
  });

  it("answers an HTTP/1.1 request without Host, or with a Host that is no host, with 400 and an Error body (§3.2)", async () => {
    await using server = await startTestServer();
    for (const head of [
      "GET /healthz HTTP/1.1\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: plant store\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: user@plantstore\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: plantstore/plants\r\n\r\n",
    ]) {
      const client = await openRaw(server.port);
      client.write(head);
      await client.closed;
      const answers = client.answers();
      expect(answers, head).toHaveLength(1);
      expect(answers[0], head).toMatchObject({
        status: 400,
        headers: { "content-type": "application/json; charset=utf-8" },
      });
      expect(JSON.parse(answers[0]!.body), head).toEqual({ error: 40000, message: expect.stringMatching(/Host/) });
    }
  });

  it("serves Host forms RFC 9112 allows: a name with a port, an IPv6 literal, empty, and none on HTTP/1.0", async () => {
    await using server = await startTestServer();
    for (const head of [
      "GET /healthz HTTP/1.1\r\nHost: plantstore.example:3000\r\nConnection: close\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: [::1]:3000\r\nConnection: close\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
      "GET /healthz HTTP/1.0\r\n\r\n",
    ]) {
      const client = await openRaw(server.port);
      client.write(head);
      await client.closed;
      expect(
        client.answers().map((answer) => answer.status),
        head,
      ).toEqual([200]);
    }
  });
});

import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { checkErrorAnswer, startTestServer, TOKEN } from "./harness.ts";

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
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
      }
    })();
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

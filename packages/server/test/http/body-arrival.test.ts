import { connect } from "node:net";

import { describe, expect, it } from "vitest";

import { startTestServer, TOKEN } from "../support/harness.ts";

/**
 * A body that arrived with its headers is taken straight from the request's buffer; one still on
 * its way is read as it comes (raw-body). Both must store and answer alike, and keep refusing a
 * body that does not match its Content-Length.
 */
function exchange(port: number, chunks: string[], gapMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.setNoDelay(true);
    socket.on("data", (d) => {
      received += d.toString();
      // One answer is all we wait for.
      if (/\r\n\r\n/.test(received) && received.endsWith("}")) socket.end();
    });
    socket.on("close", () => resolve(received));
    socket.on("error", reject);
    void (async () => {
      for (const chunk of chunks) {
        socket.write(chunk);
        // eslint-disable-next-line no-restricted-syntax -- the pace at which the client sends its body is what the test is about
        await new Promise((r) => setTimeout(r, gapMs));
      }
    })();
  });
}

const head = (length: number) =>
  "POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
  `Authorization: Bearer ${TOKEN}\r\nContent-Length: ${length}\r\n\r\n`;

describe("POST /plants with the body in the first packet or trickling in", () => {
  it("stores and answers a body sent with its headers", async () => {
    await using server = await startTestServer();
    const body = '{"id":71,"name":"Aloe","tag":"succulent"}';
    const raw = await exchange(server.port, [head(body.length) + body], 0);
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    expect(raw.endsWith('{"name":"Aloe","tag":"succulent"}')).toBe(true);
    expect(await server.store.get(71n)).toEqual({ id: 71n, name: "Aloe", tag: "succulent" });
  });

  it("stores and answers a body that arrives in pieces after the headers", async () => {
    await using server = await startTestServer();
    const body = '{"id":72,"name":"Basil"}';
    const raw = await exchange(server.port, [head(body.length), body.slice(0, 9), body.slice(9)], 60);
    expect(raw).toMatch(/^HTTP\/1\.1 200 /);
    expect(raw.endsWith('{"name":"Basil"}')).toBe(true);
    expect(await server.store.get(72n)).toEqual({ id: 72n, name: "Basil" });
  });

  it("answers many pipelined requests on one connection, each with its own body", async () => {
    await using server = await startTestServer();
    const requests = Array.from({ length: 20 }, (_, i) => {
      const body = `{"id":${100 + i},"name":"p${i}"}`;
      return head(body.length) + body;
    });
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, "127.0.0.1");
      let received = "";
      socket.on("data", (d) => {
        received += d.toString();
        if ((received.match(/HTTP\/1\.1 200 /g) ?? []).length === 20 && received.endsWith("}")) socket.end();
      });
      socket.on("close", () => resolve(received));
      socket.on("error", reject);
      socket.write(requests.join(""));
    });
    expect((raw.match(/HTTP\/1\.1 200 /g) ?? []).length).toBe(20);
    for (let i = 0; i < 20; i++)
      expect(await server.store.get(BigInt(100 + i))).toEqual({ id: BigInt(100 + i), name: `p${i}` });
  });
});

import { once } from "node:events";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { Writable } from "node:stream";

import { eventually } from "@plantstore/test-support/eventually";
import Koa from "koa";
import { describe, expect, it } from "vitest";

import { createLogger } from "../logger.ts";
import { logAppErrors } from "./app-errors.ts";

describe("logAppErrors", () => {
  it("logs a client that resets the connection mid-answer at debug, where Koa alone would console.error it", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const app = new Koa();
    logAppErrors(app, createLogger("debug", sink));
    let answering = false;
    app.use((ctx) => {
      answering = true;
      // More than loopback's socket buffers hold, so the answer is still being written at the reset.
      ctx.body = Buffer.alloc(32 * 1024 * 1024, 0x61);
    });
    const server = createServer((request, response) => void app.callback()(request, response));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
      client.on("error", () => undefined);
      client.pause();
      client.write("GET / HTTP/1.1\r\nHost: plantstore\r\n\r\n");
      await eventually(() => answering, { what: "the answer to begin" });
      client.resetAndDestroy();
      const line = await eventually(() => lines.find((l) => l.includes("client went away")), {
        what: () => `the debug line; log:\n${lines.join("")}`,
      });
      expect(JSON.parse(line)).toMatchObject({ level: 20, code: expect.stringMatching(/^(ECONNRESET|EPIPE)$/) });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

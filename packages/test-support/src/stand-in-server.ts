import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

import { seedDocument } from "./seed-document.ts";

/** One canned answer; without `type`, no Content-Type is sent. */
export type CannedAnswer = { status: number; type?: string; body: string };

export type StandInServer = { url: string; close(): Promise<void>; [Symbol.asyncDispose](): Promise<void> };

/**
 * A stand-in for the store that serves the seed as its `/openapi.json` and answers every other
 * request with `answer(request)`: for tests proving that a contract check refuses answers off the
 * interface, which the real server never sends.
 */
export async function startStandInServer(answer: (request: IncomingMessage) => CannedAnswer): Promise<StandInServer> {
  const stand = createServer((req, res) => {
    const canned =
      req.method === "GET" && req.url === "/openapi.json"
        ? { status: 200, type: "application/json", body: JSON.stringify(seedDocument) }
        : answer(req);
    res.writeHead(canned.status, canned.type === undefined ? {} : { "content-type": canned.type }).end(canned.body);
  });
  stand.listen(0, "127.0.0.1");
  await once(stand, "listening");
  const close = async () => {
    stand.closeAllConnections();
    await new Promise((resolve) => stand.close(resolve));
  };
  return { url: `http://127.0.0.1:${(stand.address() as AddressInfo).port}`, close, [Symbol.asyncDispose]: close };
}

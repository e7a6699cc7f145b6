import { once } from "node:events";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

export type Received = { headers: IncomingHttpHeaders; body: string; at: number };
type Answer = { status: number; headers?: Record<string, string> };

/**
 * A real HTTP receiver on loopback. `answer` decides each response from the request's number
 * (1-based), at once or when a returned promise settles; `"hang"` leaves the request unanswered
 * until the receiver closes.
 */
export async function startReceiver(answer: (n: number, r: Received) => Answer | "hang" | Promise<Answer>, port = 0) {
  const received: Received[] = [];
  const hanging: ServerResponse<IncomingMessage>[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      const r = { headers: req.headers, body, at: Date.now() };
      received.push(r);
      const decided = answer(received.length, r);
      if (decided === "hang") {
        hanging.push(res);
        return;
      }
      // A test's answer function that throws fails the delivery, as a crashing receiver would.
      Promise.resolve(decided).then(
        ({ status, headers }) => {
          res.writeHead(status, headers);
          res.end();
        },
        () => res.destroy(),
      );
    });
  });
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  const actualPort = (server.address() as AddressInfo).port;
  return {
    received,
    port: actualPort,
    url: `http://127.0.0.1:${actualPort}/hook`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

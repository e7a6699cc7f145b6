import type { AddressInfo } from "node:net";

import type Koa from "koa";

/**
 * Serves a reference server (the baseline, the floors, the stock adapter) the way the harness
 * starts our own: on PORT and HOST, announcing itself with the same shape of JSON line our server
 * logs (its `url`), and stopping on SIGTERM.
 */
export function listenForHarness(app: Koa, name: string): void {
  const server = app.listen(Number(process.env["PORT"] ?? 0), process.env["HOST"] ?? "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(`${JSON.stringify({ msg: `${name} listening`, url: `http://127.0.0.1:${port}` })}\n`);
  });
  process.once("SIGTERM", () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  });
}

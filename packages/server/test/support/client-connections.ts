import { globalAgent } from "node:http";

/**
 * Closes the test client's idle keep-alive connections to `url` (rawRequest uses Node's global
 * agent, which keeps them), as a client that is done would. Left open, each would hold the
 * server's stop for its whole idle grace (1 s); graceful-shutdown.test.ts tests that grace.
 */
export function closeIdleClientConnections(url: string): void {
  const { hostname, port } = new URL(url);
  for (const socket of globalAgent.freeSockets[globalAgent.getName({ host: hostname, port: Number(port) })] ?? []) {
    socket.destroy();
  }
}

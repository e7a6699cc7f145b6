import { Agent, request, type ServerResponse } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startTestServer, type TestServer } from "../support/harness.ts";

// A full collection on demand, so the test sees what is still reachable, not when V8 chose to look.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/** GET /healthz on the agent's one keep-alive connection; resolves once the whole answer has arrived. */
function healthz(agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}/healthz`, { agent }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("a keep-alive connection between requests", () => {
  it("holds on to no finished answer, so a busy server's young collections do not copy one per connection", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      let answered: WeakRef<ServerResponse> | undefined;
      const remember = (_req: unknown, res: ServerResponse) => (answered = new WeakRef(res));
      server.server.on("request", remember);
      expect(await healthz(agent)).toBe(200);
      server.server.off("request", remember);
      // The connection is still open (the agent keeps it), and its answer is finished.
      expect(agent.freeSockets[Object.keys(agent.freeSockets)[0]!]).toHaveLength(1);
      await new Promise((resolve) => setImmediate(resolve));
      collectGarbage();
      expect(answered).toBeDefined();
      expect(answered!.deref(), "the finished ServerResponse is still reachable").toBeUndefined();
      // The connection still serves the next request.
      expect(await healthz(agent)).toBe(200);
    } finally {
      agent.destroy();
    }
  });
});

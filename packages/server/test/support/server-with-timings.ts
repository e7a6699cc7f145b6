import { type Config, type RunningServer, startServer } from "../../src/index.ts";
import { createLogger } from "../../src/logger.ts";
import { closeIdleClientConnections } from "./client-connections.ts";
import { testConfig } from "./harness.ts";
import { createTestDatabase } from "./test-database.ts";

/**
 * The real server on a fresh database, like startTestServer, with `stallMarginMs` (how long past
 * the request timeout a connection that moves no byte, or whose client stopped reading, is kept;
 * 5 s by default): tests of those cuts set it short instead of waiting 5 s for each.
 * Its answers are checked against the router's document (see `contractsAt`).
 */
export async function startServerWithTimings(
  overrides: Partial<Config>,
  timings: { stallMarginMs?: number } = {},
): Promise<RunningServer> {
  const database = await createTestDatabase();
  let running: RunningServer;
  try {
    running = await startServer({
      config: testConfig(database.url, overrides),
      logger: createLogger("silent"),
      ...timings,
    });
  } catch (error) {
    await database.dispose();
    throw error;
  }
  const close = async () => {
    closeIdleClientConnections(running.url);
    await running.close();
    await database.dispose();
  };
  return { ...running, close, [Symbol.asyncDispose]: close };
}

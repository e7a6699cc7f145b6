import { type FaultProxy, startFaultProxy } from "@plantstore/test-support/fault-proxy";

import { createTestDatabase, TEST_POSTGRES_URL, type TestDatabase } from "./test-database.ts";

/**
 * A scratch PostgreSQL database reached through a FaultProxy: `url` is the DATABASE_URL that goes
 * through the proxy. `dispose()` closes the proxy, then drops the database.
 */
export async function databaseBehindProxy(): Promise<{
  database: TestDatabase;
  proxy: FaultProxy;
  url: string;
  dispose: () => Promise<void>;
}> {
  const database = await createTestDatabase("postgres");
  const upstream = new URL(TEST_POSTGRES_URL);
  const proxy = await startFaultProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
  const dispose = async () => {
    await proxy.close();
    await database.dispose();
  };
  return { database, proxy, url: proxy.urlFor(database.url), dispose };
}

/** The static tokens every test server accepts, with every scope; the first is `static-1`. */
export const TEST_TOKEN = "test-token-0123456789abcdefghijklmnop";
export const OTHER_TEST_TOKEN = "test-token-second-0123456789abcdefghij";

/**
 * The settings of the server's `Config` that test servers set, by shape: this package does not
 * depend on `@plantstore/server`, whose own tests use it too (turbo refuses a cycle).
 */
export type TestableConfig = {
  port: number;
  host: string;
  databaseUrl: string;
  tokens: string[];
  logLevel: string;
  postgres: { poolSize: number };
  rateLimits: { authFailures: unknown };
};

/**
 * A test server's settings: the defaults (`loadConfig({})`) on an ephemeral loopback port, with
 * the test tokens, no log output, then `overrides`.
 */
export function testServerConfig<Config extends TestableConfig>(
  defaults: Config,
  databaseUrl: string,
  overrides: Partial<Config> = {},
): Config {
  const settings = {
    ...defaults,
    // Small pools: many test servers share one PostgreSQL (and its max_connections) with others.
    postgres: { ...defaults.postgres, poolSize: 4 },
    port: 0,
    host: "127.0.0.1",
    databaseUrl,
    tokens: [TEST_TOKEN, OTHER_TEST_TOKEN],
    logLevel: "silent",
    // Many tests send wrong tokens from 127.0.0.1 on purpose; the failed-authentication limit
    // would turn their 401s into 429s. It has its own tests (rate-limits.test.ts), which set it.
    rateLimits: { ...defaults.rateLimits, authFailures: null },
    ...overrides,
  };
  // Every key set above is one of TestableConfig's, with a value of the server's own type.
  return settings;
}

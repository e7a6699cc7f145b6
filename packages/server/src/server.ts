import { once } from "node:events";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { Authenticator } from "./auth/principal.ts";
import { createStaticTokenAuthenticator } from "./auth/static-tokens.ts";
import type { Config } from "./config.ts";
import { createApp } from "./http/app.ts";
import { answerClientError } from "./http/client-error.ts";
import { createLogger } from "./logger.ts";
import { appRouter } from "./router/root.ts";
import { openStore } from "./storage/open-store.ts";
import type { PlantStore } from "./storage/plant-store.ts";

export type RunningServer = {
  /** e.g. `http://127.0.0.1:43121` */
  url: string;
  port: number;
  server: Server;
  store: PlantStore;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

export type StartOptions = {
  config: Config;
  logger?: Logger;
  /** Overrides the static-token authenticator built from `config.tokens`. */
  authenticator?: Authenticator;
};

const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** Opens the store, builds the app and listens; `port: 0` picks an ephemeral port. */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.logLevel);
  const store = openStore(config.databaseUrl, { durability: config.durability });
  const authenticator = options.authenticator ?? createStaticTokenAuthenticator(config.tokens);
  const app = createApp({ router: appRouter, store, authenticator, logger, bodyLimitBytes: config.bodyLimitBytes,
    corsOrigins: config.corsOrigins,
  });

  const server = createHttpServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // Node checks the two timeouts above on this interval (30 s by default, too coarse for them).
      connectionsCheckingInterval: Math.min(1_000, config.headersTimeoutMs),
    },
    app.callback(),
  );
  server.on("clientError", answerClientError);
  server.listen(config.port, config.host);
  try {
    await once(server, "listening");
  } catch (error) {
    await store.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host === "0.0.0.0" || host === "[::]" ? "127.0.0.1" : host}:${port}`;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await store.close();
    })());

  return { url, port, server, store, close, [Symbol.asyncDispose]: close };
}

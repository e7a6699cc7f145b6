import Koa from "koa";
import type { Logger } from "pino";

import { ApiError, toApiError } from "../errors.ts";
import type { Metrics } from "../metrics.ts";
import { logAppErrors } from "./app-errors.ts";
import { metricsPortPaths } from "./plain-paths.ts";
import { sendError } from "./send-error.ts";

/**
 * The app of the metrics port: its plain paths and nothing else. Anything else is 404 whatever the
 * method (no 405 and `Allow`: the port serves scrapers, not the API), and every failure is answered
 * from the error catalogue with the interface's `Error` body, as on the main port. Its requests are
 * neither logged nor counted, so scrapes do not show up in the metrics they read.
 */
export function createMetricsApp(metrics: Metrics, logger: Logger): Koa {
  const paths = new Map(metricsPortPaths(metrics).map((plain) => [plain.path, plain]));
  const app = new Koa();
  logAppErrors(app, logger);
  app.use(async (ctx) => {
    // As on the main port: every answer is taken as the type it is sent as.
    ctx.set("X-Content-Type-Options", "nosniff");
    try {
      const plain = paths.get(ctx.path);
      if (plain === undefined || !plain.methods.includes(ctx.method)) {
        throw new ApiError("NOT_FOUND", "only /metrics is served on this port");
      }
      await plain.handler(ctx);
    } catch (thrown) {
      const error = toApiError(thrown);
      if (error.status >= 500) logger.error({ component: "metrics", err: thrown }, "metrics request failed");
      sendError(ctx, error);
    }
  });
  return app;
}

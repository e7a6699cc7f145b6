import type Koa from "koa";
import type { Logger } from "pino";

/** What a client going away mid-answer looks like on our side of the socket. */
const CLIENT_GONE = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED", "ERR_STREAM_PREMATURE_CLOSE"]);

/**
 * Koa emits `error` on the app for what happens after our error middleware has answered: a socket
 * that errors while an answer is still being written. Without a listener Koa prints it with
 * console.error, outside the log and its format. A client that hung up is routine (debug); anything
 * else is logged as an error, without the request's secrets (the logger's redaction applies).
 */
export function logAppErrors(app: Koa, logger: Logger): void {
  app.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== undefined && CLIENT_GONE.has(error.code)) {
      logger.debug({ code: error.code }, "client went away while its answer was being written");
    } else {
      logger.error({ err: error }, "error after the answer began");
    }
  });
}

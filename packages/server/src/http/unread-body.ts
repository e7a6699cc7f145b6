import type Koa from "koa";

/**
 * Ends the connection after any answer given before the request's body had all arrived (a 401,
 * 413, 404 … decided from the headers). Keeping it open would oblige Node to read and discard the
 * rest of the body to reach the next request, and a client can declare gigabytes. The body of a
 * request that was read keeps its keep-alive connection.
 */
export function closeWhenBodyUnread(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      if (!ctx.req.complete) ctx.set("Connection", "close");
    }
  };
}

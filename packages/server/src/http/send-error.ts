import type Koa from "koa";

import type { ApiError } from "../errors.ts";

// What Koa's `ctx.type = "application/json"` sets, written as the header itself: the type setter
// looks the name up in mime-db on every call, ~1.5% of a request's main-thread CPU in the profile.
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** Answers with the error's status, its headers and the interface's `Error` body. */
export function sendError(ctx: Koa.Context, error: ApiError): void {
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.set("Content-Type", JSON_CONTENT_TYPE);
  ctx.body = JSON.stringify(error.body);
}

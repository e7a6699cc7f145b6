import type Koa from "koa";

import { ApiError } from "../errors.ts";

/** A name as a message may quote it: a query can be kilobytes long. */
const shown = (name: string): string => (name.length > 64 ? `${name.slice(0, 64)}…` : name);

/**
 * Refuses a query whose names or values are not percent-encoded UTF-8 (RFC 3986 §2.1, a `%` and
 * two hex digits per byte, the bytes UTF-8): Node's parser, which Koa uses, reads an invalid
 * escape as itself and invalid UTF-8 as U+FFFD, so `?tag=%ff` would be read as another request
 * than the one sent. The message names the parameter, like every other INVALID_PARAMETER.
 */
function assertPercentEncodedUtf8(query: string): void {
  try {
    // Pieces are split at `&` and `=`, which no escape's bytes hold: the whole decodes if each does.
    decodeURIComponent(query);
    return;
  } catch {
    // Find the piece to name.
  }
  for (const pair of query.split("&")) {
    const equals = pair.indexOf("=");
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    let name: string;
    try {
      name = decodeURIComponent(rawName.replaceAll("+", " "));
    } catch {
      throw new ApiError("INVALID_PARAMETER", "a query parameter's name must be percent-encoded UTF-8");
    }
    try {
      decodeURIComponent(equals < 0 ? "" : pair.slice(equals + 1));
    } catch {
      throw new ApiError("INVALID_PARAMETER", `${shown(name)} must be percent-encoded UTF-8`);
    }
  }
}

/**
 * The request's query as Koa parses it, once it is known to be percent-encoded UTF-8: what every
 * handler that reads a query reads it through, after the token is checked.
 */
export function strictQuery(ctx: Koa.Context): Koa.Context["query"] {
  assertPercentEncodedUtf8(ctx.querystring);
  return ctx.query;
}

import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";

import { ApiError } from "../errors.ts";

/** What Node's `clientError` carries besides the code (documented with the event). */
type ClientError = Error & { code?: string; bytesParsed?: number; rawPacket?: Buffer };

// A request line so far: method, one space, the start of a target (origin, absolute or `*` form).
// A header line cannot look like this: a field name is a token followed by `:`, never by a space.
const REQUEST_LINE_SO_FAR = /^[A-Z]+ (?:\/|[a-z][a-z0-9+.-]*:\/\/|\*)[^ ]*$/;

/**
 * Node's parser counts the request line and the headers against one limit (`maxHeaderSize`, 16 KiB)
 * and reports both as HPE_HEADER_OVERFLOW. RFC 9110 answers them differently (§15.5.15 414 for
 * the target, §15.5.32 431 for fields), so tell them apart by where the parser stopped: it checks
 * the limit at the end of each URL or header span (or of the piece read so far), so in the target
 * the stop is just before the ` HTTP/1.1` that ends it, or inside a request line still being read.
 */
function targetOverflowed(error: ClientError): boolean {
  const { rawPacket, bytesParsed } = error;
  if (rawPacket === undefined || bytesParsed === undefined) return false;
  const stop = Math.min(bytesParsed, rawPacket.length);
  const after = rawPacket.toString("latin1", stop, stop + 6);
  if (after === " HTTP/") return true;
  // A header value's span ends at its line end; a target's never does.
  if (after.startsWith("\r") || after.startsWith("\n")) return false;
  // (A negative offset would count from the end of the buffer.)
  const lineStart = stop === 0 ? 0 : rawPacket.lastIndexOf("\n", stop - 1) + 1;
  return REQUEST_LINE_SO_FAR.test(rawPacket.toString("latin1", lineStart, stop));
}

function apiErrorFor(error: ClientError): ApiError {
  switch (error.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("REQUEST_TIMEOUT", "the request did not arrive in time");
    case "HPE_HEADER_OVERFLOW":
      return targetOverflowed(error)
        ? new ApiError("URI_TOO_LONG", "the request target (path and query) is too long")
        : new ApiError("HEADERS_TOO_LARGE", "the request headers are too large");
    default:
      return new ApiError("BAD_REQUEST", "the request is not valid HTTP/1.1");
  }
}

/** A complete HTTP/1.1 answer carrying the `Error` body, for places that write to the socket themselves. */
export function rawErrorResponse(apiError: ApiError, headers: Record<string, string> = {}): string {
  const body = JSON.stringify(apiError.body);
  const extra = Object.entries({ ...apiError.headers, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  return (
    `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status] ?? "Error"}\r\n` +
    "Content-Type: application/json; charset=utf-8\r\n" +
    "X-Content-Type-Options: nosniff\r\n" +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    extra +
    "Connection: close\r\n\r\n" +
    body
  );
}

/**
 * Node answers failures that happen before Koa sees a request (malformed HTTP, oversize headers,
 * the request timeout) with bare status lines. Answering here keeps even those in the `Error` shape.
 */
export function answerClientError(error: ClientError, socket: Duplex): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(apiErrorFor(error)));
}

/**
 * `CONNECT` is parsed by Node but handed to a 'connect' listener instead of the app, and without
 * one the socket is dropped unanswered. This is an origin server, not a proxy: refuse it in shape.
 */
export function answerConnect(_req: IncomingMessage, socket: Duplex): void {
  socket.on("error", () => socket.destroy());
  socket.end(rawErrorResponse(new ApiError("BAD_REQUEST", "CONNECT is not supported: this server is not a proxy")));
}

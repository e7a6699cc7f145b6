import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError } from "../errors.ts";

function apiErrorFor(code: string | undefined): ApiError {
  switch (code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("REQUEST_TIMEOUT", "the request did not arrive in time");
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("HEADERS_TOO_LARGE", "the request headers are too large");
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
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(apiErrorFor(error.code)));
}

/**
 * `CONNECT` is parsed by Node but handed to a 'connect' listener instead of the app, and without
 * one the socket is dropped unanswered. This is an origin server, not a proxy: refuse it in shape.
 */
export function answerConnect(_req: IncomingMessage, socket: Duplex): void {
  socket.on("error", () => socket.destroy());
  socket.end(rawErrorResponse(new ApiError("BAD_REQUEST", "CONNECT is not supported: this server is not a proxy")));
}

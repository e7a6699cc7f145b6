import type { Duplex } from "node:stream";
import { ApiError } from "./api-error.ts";

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

/**
 * Node answers failures that happen before Koa sees a request (malformed HTTP, oversize headers,
 * the request timeout) with bare status lines. Answering here keeps even those in the `Error` shape.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const apiError = apiErrorFor(error.code);
  const body = JSON.stringify(apiError.body);
  socket.end(
    `HTTP/1.1 ${apiError.status} ${apiError.status === 408 ? "Request Timeout" : apiError.status === 431 ? "Request Header Fields Too Large" : "Bad Request"}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      "Connection: close\r\n\r\n" +
      body,
  );
}

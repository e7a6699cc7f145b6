import { type ErrorCodeName, ErrorCodes } from "@plantstore/schema";
import { describe, expect, it } from "vitest";

import { ApiError, toApiError, toTRPCError } from "./errors.ts";

/**
 * The tRPC code each status of the catalogue was given by the table errors.ts used to hold by hand,
 * before it read trpc-to-openapi's: the two must agree on every status we answer with.
 */
const CODE_BY_STATUS: Record<number, string> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_SUPPORTED",
  408: "TIMEOUT",
  409: "CONFLICT",
  // 412 and 428 came with conditional writes (issue 26), after the hand-held table: trpc-to-openapi's codes.
  412: "PRECONDITION_FAILED",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  428: "PRECONDITION_REQUIRED",
  429: "TOO_MANY_REQUESTS",
  503: "SERVICE_UNAVAILABLE",
};

describe("toTRPCError", () => {
  const names = Object.keys(ErrorCodes) as ErrorCodeName[];

  it.each(names)("gives %s the tRPC code of its status, and toApiError unwraps it unchanged", (name) => {
    const error = new ApiError(name, "why");
    const wrapped = toTRPCError(error);
    expect(wrapped.code).toBe(CODE_BY_STATUS[error.status] ?? "INTERNAL_SERVER_ERROR");
    expect(wrapped.message).toBe("why");
    expect(toApiError(wrapped)).toBe(error);
  });
});

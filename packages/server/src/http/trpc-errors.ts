import { TRPCError } from "@trpc/server";
import type { TRPC_ERROR_CODE_KEY } from "@trpc/server";
import { StoreUnavailableError } from "../storage/store-errors.ts";
import { ApiError } from "./api-error.ts";

const TRPC_CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_SUPPORTED",
  408: "TIMEOUT",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  429: "TOO_MANY_REQUESTS",
  503: "SERVICE_UNAVAILABLE",
};

/** Wraps a catalogued error for throwing inside a procedure; the adapter unwraps it again. */
export function toTRPCError(error: ApiError): TRPCError {
  return new TRPCError({
    code: TRPC_CODE_BY_STATUS[error.status] ?? "INTERNAL_SERVER_ERROR",
    message: error.message,
    cause: error,
  });
}

type Issue = { path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>; message: string };

function hasIssues(value: unknown): value is { issues: Issue[] } {
  return typeof value === "object" && value !== null && Array.isArray((value as { issues?: unknown }).issues);
}

function describeIssue(issue: Issue): string {
  const path = (issue.path ?? []).map((p) => (typeof p === "object" ? String(p.key) : String(p))).join(".");
  return path.length > 0 ? `${path} ${issue.message}` : issue.message;
}

/** The database is down or unreachable: a retry may succeed soon, so say when (RFC 9110 §10.2.3). */
function unavailable(cause: StoreUnavailableError): ApiError {
  return new ApiError("UNAVAILABLE", "the database is not reachable right now; retry shortly", { headers: { "Retry-After": "1" }, cause });
}

/**
 * The one place that decides which catalogue entry any thrown value becomes. Input validation
 * failures (zod issues) become VALIDATION_FAILED with every issue named; anything unrecognised is
 * INTERNAL and its details stay in the log.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreUnavailableError) return unavailable(error);
  if (error instanceof TRPCError) {
    if (error.cause instanceof ApiError) return error.cause;
    if (error.cause instanceof StoreUnavailableError) return unavailable(error.cause);
    if (error.code === "BAD_REQUEST" && hasIssues(error.cause)) {
      const message = error.cause.issues.map(describeIssue).join("; ");
      return new ApiError("VALIDATION_FAILED", message, { cause: error });
    }
  }
  return new ApiError("INTERNAL", "internal server error", { cause: error });
}

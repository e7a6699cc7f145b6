import { TRPCError } from "@trpc/server";
import type { TRPC_ERROR_CODE_KEY } from "@trpc/server";
import { ErrorCodes, type ErrorCodeName } from "@plantstore/schema";
import { StoreBusyError, StoreUnavailableError } from "./storage/store-errors.ts";

// Neutral ground: procedures, auth and the HTTP adapter all throw and read these, and none of them
// has to import the transport for it.

/**
 * A failure with a place in the error catalogue. Thrown from any layer; the one error handler
 * turns it into the interface's `Error` body and its status.
 */
export class ApiError extends Error {
  readonly code: ErrorCodeName;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCodeName, message: string, options?: { headers?: Record<string, string>; cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = "ApiError";
    this.code = code;
    this.status = ErrorCodes[code].status;
    this.headers = options?.headers ?? {};
  }

  get body(): { error: number; message: string } {
    return { error: ErrorCodes[this.code].error, message: this.message };
  }
}

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
  return new ApiError("UNAVAILABLE", "the database is not reachable right now; retry shortly", {
    headers: { "Retry-After": "1" },
    cause,
  });
}

/** The database answers but a lock or a long statement held this request up: retrying soon may pass. */
function busy(cause: StoreBusyError): ApiError {
  return new ApiError("STORAGE_BUSY", "the database is busy (a lock or a long statement); retry shortly", {
    headers: { "Retry-After": "1" },
    cause,
  });
}

/**
 * The one place that decides which catalogue entry any thrown value becomes. Input validation
 * failures (zod issues) become VALIDATION_FAILED with every issue named; anything unrecognised is
 * INTERNAL and its details stay in the log.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreUnavailableError) return unavailable(error);
  if (error instanceof StoreBusyError) return busy(error);
  if (error instanceof TRPCError) {
    if (error.cause instanceof ApiError) return error.cause;
    if (error.cause instanceof StoreUnavailableError) return unavailable(error.cause);
    if (error.cause instanceof StoreBusyError) return busy(error.cause);
    if (error.code === "BAD_REQUEST" && hasIssues(error.cause)) {
      const message = error.cause.issues.map(describeIssue).join("; ");
      return new ApiError("VALIDATION_FAILED", message, { cause: error });
    }
  }
  return new ApiError("INTERNAL", "internal server error", { cause: error });
}

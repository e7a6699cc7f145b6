import { type ErrorCodeName, ErrorCodes } from "@plantstore/schema";
import { TRPCError } from "@trpc/server";
import { HTTP_STATUS_TRPC_ERROR_CODE } from "trpc-to-openapi";

import { StoreError, type StoreFailureKind } from "./storage/store-errors.ts";

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

/**
 * Wraps a catalogued error for throwing inside a procedure; the adapter unwraps it again. The tRPC
 * code is trpc-to-openapi's for the status (its table is the inverse of the one its adapters answer
 * with), so a caller through `createCaller` sees the code the stock adapter would map back to the
 * same status; statuses tRPC has no code for (414, 431) are INTERNAL_SERVER_ERROR, as before.
 */
export function toTRPCError(error: ApiError): TRPCError {
  return new TRPCError({
    code: HTTP_STATUS_TRPC_ERROR_CODE[error.status] ?? "INTERNAL_SERVER_ERROR",
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

/**
 * Each kind of storage failure as it is answered: 503 (the instance cannot do it now; another may,
 * or this one later), a code that names the cause, and when to retry (RFC 9110 §10.2.3). A lock
 * clears in moments; a full disk or a read-only file needs an operator.
 */
const STORE_ANSWERS: Record<StoreFailureKind, { code: ErrorCodeName; message: string; retryAfterSeconds: number }> = {
  unavailable: {
    code: "UNAVAILABLE",
    message: "the database is not reachable right now; retry shortly",
    retryAfterSeconds: 1,
  },
  busy: {
    code: "STORAGE_BUSY",
    message: "the database is busy (a lock or a long statement); retry shortly",
    retryAfterSeconds: 1,
  },
  full: {
    code: "STORAGE_FULL",
    message: "the database's disk is full; retry once space is freed",
    retryAfterSeconds: 5,
  },
  read_only: {
    code: "STORAGE_READ_ONLY",
    message: "the database cannot be written (it is read-only); retry once it is writable",
    retryAfterSeconds: 5,
  },
  io: {
    code: "STORAGE_FAILED",
    message: "the database's files could not be read or written; retry later",
    retryAfterSeconds: 5,
  },
  corrupt: {
    code: "STORAGE_FAILED",
    message: "the database file is damaged; it needs repair before retries can succeed",
    retryAfterSeconds: 5,
  },
};

/**
 * The answer to a storage failure of this kind; `message` replaces the default one (readiness
 * says what it saw). The StoreError's own text, which quotes the driver, stays in the log.
 */
export function storeFailureAnswer(
  kind: StoreFailureKind,
  options: { message?: string; cause?: unknown } = {},
): ApiError {
  const answer = STORE_ANSWERS[kind];
  return new ApiError(answer.code, options.message ?? answer.message, {
    headers: { "Retry-After": String(answer.retryAfterSeconds) },
    cause: options.cause,
  });
}

/**
 * The one place that decides which catalogue entry any thrown value becomes. Input validation
 * failures (zod issues) become VALIDATION_FAILED with every issue named; anything unrecognised is
 * INTERNAL and its details stay in the log.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreError) return storeFailureAnswer(error.kind, { cause: error });
  if (error instanceof TRPCError) {
    if (error.cause instanceof ApiError) return error.cause;
    if (error.cause instanceof StoreError) return storeFailureAnswer(error.cause.kind, { cause: error.cause });
    if (error.code === "BAD_REQUEST" && hasIssues(error.cause)) {
      const message = error.cause.issues.map(describeIssue).join("; ");
      return new ApiError("VALIDATION_FAILED", message, { cause: error });
    }
  }
  return new ApiError("INTERNAL", "internal server error", { cause: error });
}

import type { ErrorCodeName } from "@plantstore/schema";
import type { z } from "zod";

type Json = Record<string, unknown>;

/** An OpenAPI header object. */
export type HeaderDoc = { description: string; schema: Json };

/**
 * What the served document says about an operation beyond what trpc-to-openapi derives from its
 * `openapi` meta and zod schemas. Each procedure's `meta` carries it beside `scopes`, so adding an
 * operation touches its procedure and nothing in `http/`: the document reads only this.
 */
export type OperationDocs = {
  /** Every catalogued error the operation can answer; the document groups them by status. */
  errors: readonly ErrorCodeName[];
  /** Headers of the success answer. */
  successHeaders?: Readonly<Record<string, HeaderDoc>>;
  /**
   * Query and path parameters arrive as text and their zod schemas describe that text; these
   * JSON schemas state what the text must hold (an int64, a page size), by parameter name.
   */
  parameterSchemas?: Readonly<Record<string, Json>>;
  /** The description of the JSON body, whose schema is the procedure's input. */
  requestBodyDescription?: (limits: { bodyLimitBytes: number }) => string;
  /** The schema the document gives the answer when the procedure checks its output more cheaply. */
  documentedOutput?: z.ZodType;
  /**
   * The named schema the document gives the body when the input also holds path parameters
   * (which trpc-to-openapi would otherwise inline without its name).
   */
  documentedBody?: z.ZodType;
  /** The one media type the body is accepted in (default `application/json`); the adapter answers 415 to others. */
  requestMediaType?: string;
  /** Header parameters the operation reads (the conditional headers): Parameter Objects without `in`, examples in `schema`. */
  headerParameters?: readonly Json[];
  /** Successes besides the 200 (or 204): a creating 201 with the same body, a bodiless 304. */
  otherSuccesses?: Readonly<
    Partial<Record<"201" | "304", { description: string; headers: Record<string, HeaderDoc> }>>
  >;
  /** Headers of the operation's error answers by status, over the ones every operation's carry (service-docs.ts). */
  errorHeaders?: Readonly<Record<number, Readonly<Record<string, HeaderDoc>>>>;
};

/** Failures of the bearer token and its rate limit, possible on every protected operation. */
export const AUTH_ERRORS = [
  "MISSING_TOKEN",
  "INVALID_TOKEN",
  "INSUFFICIENT_SCOPE",
  "RATE_LIMITED",
] as const satisfies readonly ErrorCodeName[];
/**
 * Failures of the request as it arrives, before it reaches an operation's code, possible on every
 * operation: malformed HTTP (Node's parser), a request target too long, headers too large, headers
 * or body too slow.
 */
export const REQUEST_ERRORS = [
  "BAD_REQUEST",
  "REQUEST_TIMEOUT",
  "URI_TOO_LONG",
  "HEADERS_TOO_LARGE",
] as const satisfies readonly ErrorCodeName[];
/** Failures of the server itself and of its storage, possible on every operation. */
export const SERVER_ERRORS = [
  "INTERNAL",
  "UNAVAILABLE",
  "SERVER_BUSY",
  "STORAGE_BUSY",
  "STORAGE_FULL",
  "STORAGE_READ_ONLY",
  "STORAGE_FAILED",
] as const satisfies readonly ErrorCodeName[];

export const header = (description: string): HeaderDoc => ({ description, schema: { type: "string" } });

/**
 * draft-ietf-httpapi-ratelimit-headers-10 fields, on every answer to a request with an issued token
 * or JWT. The development tokens of `PLANTSTORE_TOKENS` are not limited, so carry none.
 */
export const RATE_LIMIT_HEADERS: Readonly<Record<string, HeaderDoc>> = {
  "RateLimit-Policy": header(
    'The per-token quota policy (draft-ietf-httpapi-ratelimit-headers), e.g. `"token";q=6000;w=60`: `q` requests per `w` seconds. ' +
      'On a 429 for failed authentications the policy is `"auth-failures"`. Absent when the per-token limit is off, and for ' +
      "the development tokens of `PLANTSTORE_TOKENS`, which are never limited.",
  ),
  RateLimit: header('What is left of it, e.g. `"token";r=5999;t=42`: `r` requests remain for `t` more seconds.'),
};

/**
 * `Cache-Control` of every answer to a request on an operation that takes a token, errors
 * included (http/authenticate.ts sets it): the answer depends on the token.
 */
export const AUTHORIZED_CACHE_CONTROL = "private, no-cache";

/** The document's word for it, on the answers a cache could otherwise keep. */
export const AUTHORIZED_CACHE_HEADERS: Readonly<Record<string, HeaderDoc>> = {
  "Cache-Control": header(
    `\`${AUTHORIZED_CACHE_CONTROL}\`: the answer depends on the bearer token, so only the caller's own cache may ` +
      "keep it, and it must revalidate it before each reuse.",
  ),
};

/**
 * An int64 query or path parameter, as the document states it. A JSON number example: the document
 * is written with plain `JSON.stringify` (exact for safe integers only).
 */
export const int64Parameter = (description: string, example: number): Json => ({
  type: "integer",
  format: "int64",
  description,
  examples: [example],
});

/**
 * The error-code catalogue: one stable int32 per kind of failure. The first three digits are the
 * HTTP status it is sent with, so a code read from a log already says how it was answered.
 * Codes are never reused or renumbered; new kinds get new codes.
 */
export const ErrorCodes = {
  BAD_REQUEST: {
    error: 40000,
    status: 400,
    meaning: "The request is malformed in a way no more specific code covers.",
  },
  MALFORMED_JSON: { error: 40001, status: 400, meaning: "The body is not valid JSON." },
  BODY_NOT_OBJECT: { error: 40002, status: 400, meaning: "The body is valid JSON but not a JSON object." },
  EMPTY_BODY: { error: 40003, status: 400, meaning: "The body is empty; a JSON object is required." },
  VALIDATION_FAILED: {
    error: 40004,
    status: 400,
    meaning: "A field is missing, has the wrong JSON type, or is out of range (the message names it).",
  },
  INVALID_PARAMETER: { error: 40005, status: 400, meaning: "A path or query parameter is malformed or out of range." },
  MISSING_TOKEN: { error: 40100, status: 401, meaning: "No bearer token was sent." },
  INVALID_TOKEN: { error: 40101, status: 401, meaning: "The bearer token is unknown, malformed, expired or revoked." },
  INSUFFICIENT_SCOPE: {
    error: 40300,
    status: 403,
    meaning: "The token is valid but lacks the scope the operation needs.",
  },
  NOT_FOUND: { error: 40400, status: 404, meaning: "No operation exists at this path." },
  PLANT_NOT_FOUND: { error: 40401, status: 404, meaning: "No plant with this id is stored." },
  METHOD_NOT_ALLOWED: {
    error: 40500,
    status: 405,
    meaning: "The path exists but not with this method; see the Allow header.",
  },
  REQUEST_TIMEOUT: { error: 40800, status: 408, meaning: "The request body did not arrive in time." },
  ID_CONFLICT: {
    error: 40900,
    status: 409,
    meaning: "A plant with this id is already stored with a different name or tag.",
  },
  BODY_TOO_LARGE: { error: 41300, status: 413, meaning: "The body is larger than the configured limit." },
  URI_TOO_LONG: {
    error: 41400,
    status: 414,
    meaning: "The request target (path and query) is longer than the server accepts.",
  },
  PRECONDITION_FAILED: {
    error: 41200,
    status: 412,
    meaning:
      "The plant changed since the ETag in If-Match, or If-None-Match matched it (If-None-Match: * matches any stored plant); the ETag header is the current one.",
  },
  UNSUPPORTED_MEDIA_TYPE: {
    error: 41500,
    status: 415,
    meaning:
      "The body is not sent in the media type the operation accepts (application/json; PATCH: application/merge-patch+json).",
  },
  UNSUPPORTED_CONTENT_ENCODING: {
    error: 41501,
    status: 415,
    meaning: "The body is sent with a Content-Encoding other than identity; Accept-Encoding names what is accepted.",
  },
  HEADERS_TOO_LARGE: { error: 43100, status: 431, meaning: "The request headers are larger than the server accepts." },
  PRECONDITION_REQUIRED: {
    error: 42800,
    status: 428,
    meaning:
      "This change needs If-Match with the plant's current ETag, so it cannot overwrite a change it has not seen.",
  },
  RATE_LIMITED: { error: 42900, status: 429, meaning: "Too many requests; retry after the time in Retry-After." },
  TOO_MANY_STREAMS: {
    error: 42901,
    status: 429,
    meaning:
      "The token, or the client address, holds as many open event streams as it may; close one, or retry after Retry-After.",
  },
  INTERNAL: { error: 50000, status: 500, meaning: "An unexpected failure; details are logged, never sent." },
  UNAVAILABLE: { error: 50300, status: 503, meaning: "The store cannot reach its database right now; retry shortly." },
  SERVER_BUSY: {
    error: 50301,
    status: 503,
    meaning: "The server holds as many connections as it accepts; retry after Retry-After.",
  },
  STORAGE_BUSY: {
    error: 50302,
    status: 503,
    meaning: "The database is busy (a lock or a long statement); retry shortly.",
  },
  STORAGE_FULL: {
    error: 50303,
    status: 503,
    meaning: "The database's disk is full; nothing of the request was stored. Retry once space is freed.",
  },
  STORAGE_READ_ONLY: {
    error: 50304,
    status: 503,
    meaning: "The database cannot be written (a read-only file or mount); nothing of the request was stored.",
  },
  STREAMS_FULL: {
    error: 50306,
    status: 503,
    meaning:
      "The instance holds as many event streams as it accepts (their share of its connections); retry after Retry-After, or on another instance.",
  },
  STORAGE_FAILED: {
    error: 50305,
    status: 503,
    meaning: "The database's storage failed (an I/O error or a damaged file); nothing of the request was stored.",
  },
} as const satisfies Record<string, { error: number; status: number; meaning: string }>;

export type ErrorCodeName = keyof typeof ErrorCodes;
export type ErrorCodeEntry = (typeof ErrorCodes)[ErrorCodeName];

const byNumber = new Map<number, ErrorCodeName>(
  (Object.keys(ErrorCodes) as ErrorCodeName[]).map((name) => [ErrorCodes[name].error, name]),
);

/** The catalogue name of a numeric code, or undefined for a code this version does not know. */
export function errorCodeName(code: number): ErrorCodeName | undefined {
  return byNumber.get(code);
}

import { type ErrorCodeName, errorCodeName } from "@plantstore/schema";

/**
 * The service answered with a catalogued `Error` body. `status` is the HTTP status and `code` the
 * body's numeric `error`; `codeName` is its catalogue name, or undefined for a code newer than
 * this client (a newer server may add codes, so callers should branch on `status` first).
 */
export class PlantStoreError extends Error {
  readonly status: number;
  readonly code: number;
  readonly codeName: ErrorCodeName | undefined;

  constructor(status: number, code: number, message: string) {
    super(message);
    this.name = "PlantStoreError";
    this.status = status;
    this.code = code;
    this.codeName = errorCodeName(code);
  }
}

// The subclasses keep `name` "PlantStoreError", as 401/403/429 answers were named before they
// existed; tell them apart with instanceof or `status`.

/** 401: no token was sent, or it is unknown, malformed, expired or revoked. */
export class PlantStoreUnauthorizedError extends PlantStoreError {
  /** The `WWW-Authenticate` challenge, e.g. `Bearer realm="plantstore", error="invalid_token"`. */
  readonly challenge: string | undefined;

  constructor(code: number, message: string, challenge: string | undefined) {
    super(401, code, message);
    this.challenge = challenge;
  }
}

/** 403: the token is valid but lacks a scope the operation needs. */
export class PlantStoreForbiddenError extends PlantStoreError {
  /** The scopes the server named in its challenge (`scope="plants:write"`), e.g. `["plants:write"]`. */
  readonly requiredScopes: readonly string[];

  constructor(code: number, message: string, requiredScopes: readonly string[]) {
    super(403, code, message);
    this.requiredScopes = requiredScopes;
  }
}

/** 429: too many requests for this token, or too many failed authentications from this address. */
export class PlantStoreRateLimitError extends PlantStoreError {
  /** Seconds to wait before retrying (from `Retry-After`), or undefined when the server did not say. */
  readonly retryAfter: number | undefined;

  constructor(code: number, message: string, retryAfter: number | undefined) {
    super(429, code, message);
    this.retryAfter = retryAfter;
  }
}

/**
 * 412: the plant changed since the entity tag sent in `If-Match` (someone else wrote it meanwhile),
 * or `If-None-Match: *` found the id taken. Nothing was written: read the plant again and retry.
 */
export class PlantStorePreconditionFailedError extends PlantStoreError {
  /**
   * The plant's current `ETag`, from the answer's header (what a re-read would answer), or
   * undefined when the server sent none: no plant is stored under the id.
   */
  readonly currentETag: string | undefined;

  constructor(code: number, message: string, currentETag: string | undefined) {
    super(412, code, message);
    this.currentETag = currentETag;
  }
}

/**
 * 428: a change that could overwrite another was sent without `If-Match` (RFC 6585 §3). This
 * client always sends a precondition with updatePlant and replacePlant: something between dropped it.
 */
export class PlantStorePreconditionRequiredError extends PlantStoreError {
  constructor(code: number, message: string) {
    super(428, code, message);
  }
}

/** `Retry-After` is delay-seconds or an HTTP-date (RFC 9110 §10.2.3); either becomes seconds from now. */
function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** The typed error for an `Error` body: a subclass for 401, 403, 412, 428 and 429, else PlantStoreError. */
export function toPlantStoreError(status: number, code: number, message: string, headers: Headers): PlantStoreError {
  const challenge = headers.get("www-authenticate") ?? undefined;
  switch (status) {
    case 401:
      return new PlantStoreUnauthorizedError(code, message, challenge);
    case 403: {
      const scope = challenge === undefined ? undefined : /\bscope="([^"]*)"/.exec(challenge)?.[1];
      return new PlantStoreForbiddenError(
        code,
        message,
        scope === undefined ? [] : scope.split(" ").filter((s) => s.length > 0),
      );
    }
    case 412:
      return new PlantStorePreconditionFailedError(code, message, headers.get("etag") ?? undefined);
    case 428:
      return new PlantStorePreconditionRequiredError(code, message);
    case 429:
      return new PlantStoreRateLimitError(code, message, retryAfterSeconds(headers.get("retry-after")));
    default:
      return new PlantStoreError(status, code, message);
  }
}

/**
 * No usable answer: the request never got a response (network failure, DNS, CORS, refused
 * connection; `status` is undefined) or the response did not match the interface (`status` is
 * the HTTP status it came with). The underlying failure is in `cause`.
 */
export class PlantStoreProtocolError extends Error {
  readonly status: number | undefined;

  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "PlantStoreProtocolError";
    this.status = options.status;
  }
}

export type InputIssue = { path: string; message: string };

/** The input was refused locally, before any request: the server would have refused it too. */
export class PlantStoreInputError extends Error {
  readonly issues: readonly InputIssue[];

  /** `subject` names what was refused in the message: a plant, an id, list options. */
  constructor(issues: readonly InputIssue[], subject = "plant") {
    super(
      `invalid ${subject}: ${issues.map((i) => (i.path.length > 0 ? `${i.path} ${i.message}` : i.message)).join("; ")}`,
    );
    this.name = "PlantStoreInputError";
    this.issues = issues;
  }
}

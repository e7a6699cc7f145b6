import { errorCodeName, type ErrorCodeName } from "@plantstore/schema";

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
    super(`invalid ${subject}: ${issues.map((i) => (i.path.length > 0 ? `${i.path} ${i.message}` : i.message)).join("; ")}`);
    this.name = "PlantStoreInputError";
    this.issues = issues;
  }
}

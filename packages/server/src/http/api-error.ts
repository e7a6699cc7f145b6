import { ErrorCodes, type ErrorCodeName } from "@plantstore/schema";

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

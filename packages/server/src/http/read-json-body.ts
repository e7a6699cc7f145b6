import type { IncomingMessage } from "node:http";

import { JsonDuplicateNameError, JsonTooDeepError, parseJsonLossless } from "@plantstore/schema";
import { parse as parseContentType } from "content-type";
import getRawBody from "raw-body";

import { ApiError } from "../errors.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Refuses a body in any media type but `mediaType` (`application/json`, or PATCH's
 * `application/merge-patch+json`), parameters allowed; a charset, if given, must be UTF-8. A PATCH
 * refused names the patch format it reads in `Accept-Patch` (RFC 5789 §3.1).
 */
export function assertMediaType(header: string | undefined, mediaType: string): void {
  const refused = (message: string) =>
    new ApiError(
      "UNSUPPORTED_MEDIA_TYPE",
      message,
      mediaType === "application/json" ? undefined : { headers: { "Accept-Patch": mediaType } },
    );
  const expected = `Content-Type must be ${mediaType}`;
  if (header === undefined || header.length === 0) throw refused(expected);
  let parsed;
  try {
    parsed = parseContentType(header);
  } catch {
    throw refused(expected);
  }
  if (parsed.type !== mediaType) throw refused(expected);
  const charset = parsed.parameters["charset"]?.toLowerCase();
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw refused("the JSON body must be encoded as UTF-8");
  }
}

/** The content codings a body may be sent with: none but `identity`. */
const ACCEPTED_CONTENT_ENCODING = "identity";

/**
 * Refuses a body sent with a content coding (gzip, deflate, br, …): the body limit counts the bytes
 * as read, and decoding would let a small compressed body grow past it. RFC 9110 §15.5.16: a 415
 * for a content coding names the accepted ones in `Accept-Encoding`.
 */
export function assertIdentityEncoding(header: string | undefined): void {
  if (header === undefined) return;
  const codings = header
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding.length > 0);
  const other = codings.find((coding) => coding !== ACCEPTED_CONTENT_ENCODING);
  if (other === undefined) return;
  throw new ApiError(
    "UNSUPPORTED_CONTENT_ENCODING",
    `Content-Encoding ${other} is not supported; send the body as identity`,
    {
      headers: { "Accept-Encoding": ACCEPTED_CONTENT_ENCODING },
    },
  );
}

type RawBodyFailure = { type?: string };

function rawBodyError(error: unknown, limit: number): ApiError {
  const type = (error as RawBodyFailure).type;
  if (type === "entity.too.large") return new ApiError("BODY_TOO_LARGE", `the body must be at most ${limit} bytes`);
  if (type === "request.size.invalid")
    return new ApiError("BAD_REQUEST", "the body length does not match Content-Length");
  return new ApiError("BAD_REQUEST", "the body could not be read", { cause: error });
}

/**
 * The body, when all of it has already arrived: a small body comes in the same packet as the
 * headers, and Node has parsed and buffered it by the time the handler awaits. Taking it from the
 * stream's buffer in one read skips raw-body's listeners and promise, a measurable share of a
 * request. The parser hands a request exactly Content-Length body bytes, so that many buffered is
 * all of it (`req.complete` may still be false: it is set a callback later). Anything else
 * (chunked, still arriving) goes through raw-body.
 */
function takeArrivedBody(req: IncomingMessage, declared: string | undefined): Buffer | undefined {
  if (declared === undefined || req.readableFlowing === true || req.readableEncoding !== null) return undefined;
  const length = Number(declared);
  if (length === 0 || req.readableLength !== length) return undefined;
  const bytes = req.read() as Buffer | null;
  if (bytes === null) return undefined;
  if (bytes.length !== length) throw new ApiError("BAD_REQUEST", "the body length does not match Content-Length");
  return bytes;
}

/**
 * Reads the whole body within `limit` bytes and parses it as a JSON object, keeping integer
 * literals exact (`bigint`). Every failure is a catalogued ApiError. `askForBody` is called once the
 * declared length is known to be acceptable, before any byte of the body is read.
 */
export async function readJsonObject(
  req: IncomingMessage,
  limit: number,
  askForBody?: () => void,
): Promise<Record<string, unknown>> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) {
    throw new ApiError("BODY_TOO_LARGE", `the body must be at most ${limit} bytes`);
  }
  askForBody?.();
  let bytes: Buffer | undefined = takeArrivedBody(req, declared);
  if (bytes === undefined) {
    try {
      bytes = await getRawBody(req, { limit, length: declared ?? null });
    } catch (error) {
      throw rawBodyError(error, limit);
    }
  }
  if (bytes.length === 0) throw new ApiError("EMPTY_BODY", "the body is empty; send a JSON object");

  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ApiError("MALFORMED_JSON", "the body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = parseJsonLossless(text);
  } catch (error) {
    // Valid JSON, so not MALFORMED_JSON: a limit of ours, like a field out of range.
    if (error instanceof JsonTooDeepError) throw new ApiError("VALIDATION_FAILED", `the body is ${error.message}`);
    // Valid JSON too (RFC 8259 leaves a repeated name to each parser), refused so that no reader of
    // the same body, a proxy that takes the first value, sees another request than ours.
    if (error instanceof JsonDuplicateNameError) throw new ApiError("VALIDATION_FAILED", `the body ${error.message}`);
    throw new ApiError("MALFORMED_JSON", "the body is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("BODY_NOT_OBJECT", "the body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

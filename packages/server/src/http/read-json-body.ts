import type { IncomingMessage } from "node:http";
import { parse as parseContentType } from "content-type";
import getRawBody from "raw-body";
import { parseJsonLossless } from "@plantstore/schema";
import { ApiError } from "./api-error.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Refuses anything but `application/json` (parameters allowed; a charset, if given, must be UTF-8). */
export function assertJsonContentType(header: string | undefined): void {
  if (header === undefined || header.length === 0) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
  }
  let parsed;
  try {
    parsed = parseContentType(header);
  } catch {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
  }
  if (parsed.type !== "application/json") {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
  }
  const charset = parsed.parameters["charset"]?.toLowerCase();
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "the JSON body must be encoded as UTF-8");
  }
}

type RawBodyFailure = { type?: string };

/**
 * Reads the whole body within `limit` bytes and parses it as a JSON object, keeping integer
 * literals exact (`bigint`). Every failure is a catalogued ApiError.
 */
export async function readJsonObject(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) {
    throw new ApiError("BODY_TOO_LARGE", `the body must be at most ${limit} bytes`);
  }
  let bytes: Buffer;
  try {
    bytes = await getRawBody(req, { limit, length: declared ?? null });
  } catch (error) {
    const type = (error as RawBodyFailure).type;
    if (type === "entity.too.large") throw new ApiError("BODY_TOO_LARGE", `the body must be at most ${limit} bytes`);
    if (type === "request.size.invalid") {
      throw new ApiError("BAD_REQUEST", "the body length does not match Content-Length");
    }
    throw new ApiError("BAD_REQUEST", "the body could not be read", { cause: error });
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
  } catch {
    throw new ApiError("MALFORMED_JSON", "the body is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("BODY_NOT_OBJECT", "the body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

import { INT64_MAX, INT64_MIN } from "@plantstore/schema";
import { InvalidArgumentError } from "commander";

const DECIMAL_INTEGER = /^-?\d+$/;

/**
 * Parses `--id` exactly: decimal digits only (no `1e3`, `0x10`, `1.0` or spaces, all of which
 * `Number` or `BigInt` would accept), as a bigint so ids beyond 2^53 are not rounded.
 */
export function parseId(text: string): bigint {
  if (!DECIMAL_INTEGER.test(text)) {
    throw new InvalidArgumentError("Must be a decimal integer, e.g. 7 or -42.");
  }
  const id = BigInt(text);
  if (id < INT64_MIN || id > INT64_MAX) {
    throw new InvalidArgumentError(`Must be within int64 (${INT64_MIN} to ${INT64_MAX}).`);
  }
  return id;
}

import { z } from "zod";

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/**
 * A signed 64-bit integer. Carried as `bigint` so ids above 2^53 stay exact; on the wire it is a
 * plain JSON integer literal (no quotes, no fraction, no exponent).
 */
export const Int64 = z
  .bigint({
    error: (issue) =>
      issue.input === undefined ? "is required" : "must be a JSON integer (int64) without quotes, fraction or exponent",
  })
  .min(INT64_MIN, { error: "must be at least -9223372036854775808 (int64)" })
  .max(INT64_MAX, { error: "must be at most 9223372036854775807 (int64)" });

export type Int64 = z.infer<typeof Int64>;

/** Accepts a `bigint`, or a `number` that is a safe integer, and returns the exact `bigint`. */
export function toInt64(value: bigint | number): bigint {
  if (typeof value === "bigint") return value;
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`${value} is not a safe integer: pass ids beyond 2^53 as bigint`);
  }
  return BigInt(value);
}

import { EventPositionText } from "@plantstore/schema";
import { InvalidArgumentError } from "commander";

/** Parses `--after` of `plants watch` exactly: a position as the feed writes it, a non-negative decimal int64. */
export function parsePosition(text: string): bigint {
  const parsed = EventPositionText.safeParse(text);
  if (!parsed.success) throw new InvalidArgumentError("Must be a position: a decimal integer from 0 to 2^63 - 1.");
  return parsed.data;
}

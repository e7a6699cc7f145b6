import type { IfMatch } from "./storage/plant-store.ts";

// Neutral ground like errors.ts: the HTTP adapter parses the headers into this, procedures read it.

/**
 * A request's conditional headers (RFC 9110 §13.1), parsed: `*` or the entity tags as sent (a weak
 * one keeps its `W/`). Absent headers are undefined.
 */
export type Preconditions = { ifMatch?: IfMatch | undefined; ifNoneMatch?: IfMatch | undefined };

const opaque = (tag: string): string => (tag.startsWith("W/") ? tag.slice(2) : tag);

/**
 * Whether `If-None-Match` matches the current tag, so the condition is false (RFC 9110 §13.1.2):
 * weak comparison, so a tag a cache weakened still spares a transfer.
 */
export function ifNoneMatchMatches(ifNoneMatch: IfMatch, current: string): boolean {
  if (ifNoneMatch === "*") return true;
  const wanted = opaque(current);
  return ifNoneMatch.some((tag) => opaque(tag) === wanted);
}

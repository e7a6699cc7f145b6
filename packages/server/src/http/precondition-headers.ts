import { ApiError } from "../errors.ts";
import type { Preconditions } from "../preconditions.ts";
import type { IfMatch } from "../storage/plant-store.ts";

// RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
const ENTITY_TAG = /^(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"/;
const OWS = /^[ \t]*/;

/**
 * `*` or a list of entity tags (RFC 9110 §13.1.1, §5.6.1: empty list elements are allowed and
 * skipped). Node joins repeated header lines with ", ", which is the same list. Anything else is a
 * 400 that says what was expected, rather than a condition silently read as absent.
 */
function parseEntityTags(name: string, value: string): IfMatch {
  if (value.trim() === "*") return "*";
  const tags: string[] = [];
  let rest = value;
  for (;;) {
    rest = rest.replace(OWS, "");
    if (rest.startsWith(",")) {
      rest = rest.slice(1);
      continue;
    }
    if (rest.length === 0) break;
    const tag = ENTITY_TAG.exec(rest)?.[0];
    if (tag === undefined || !/^[ \t]*(?:,|$)/.test(rest.slice(tag.length))) {
      throw new ApiError(
        "BAD_REQUEST",
        `${name} must be * or a comma-separated list of entity tags such as "abc" or W/"abc" (RFC 9110 §13.1)`,
      );
    }
    tags.push(tag);
    rest = rest.slice(tag.length);
  }
  if (tags.length === 0) throw new ApiError("BAD_REQUEST", `${name} is empty; send * or at least one entity tag`);
  return tags;
}

/** The request's `If-Match` and `If-None-Match`, parsed; undefined when not sent. */
export function readPreconditions(headers: { "if-match"?: string; "if-none-match"?: string }): Preconditions {
  const ifMatch = headers["if-match"];
  const ifNoneMatch = headers["if-none-match"];
  return {
    ifMatch: ifMatch === undefined ? undefined : parseEntityTags("If-Match", ifMatch),
    ifNoneMatch: ifNoneMatch === undefined ? undefined : parseEntityTags("If-None-Match", ifNoneMatch),
  };
}

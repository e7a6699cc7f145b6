import { PlantStoreInputError, PlantStoreProtocolError } from "./errors.ts";

/**
 * What `ifMatch` and `ifNoneMatch` accept: an entity tag as an answer's `ETag` header gave it
 * (quotes included, e.g. `"Xy…"`), several of them, or `"*"` (any stored plant).
 */
export type EntityTags = string | readonly string[];

// RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE. Only visible ASCII is taken, since
// fetch would refuse (or re-encode) anything else in a header.
const ENTITY_TAG = /^(?:W\/)?"[\x21\x23-\x7e]*"$/;

/**
 * The value of an `If-Match` or `If-None-Match` header (RFC 9110 §13.1.1, §13.1.2). A tag without
 * its quotes would never match, and a newline would be refused by fetch: both are refused here,
 * before sending, as a PlantStoreInputError naming the option.
 */
export function conditionHeader(tags: EntityTags | undefined, option: string): string {
  if (tags === "*") return "*";
  if (tags === undefined)
    throw new PlantStoreInputError(
      [{ path: option, message: "is required: the ETag the change is based on" }],
      "precondition",
    );
  const list: readonly unknown[] = typeof tags === "string" ? [tags] : Array.isArray(tags) ? tags : [tags];
  const refused = (message: string) => new PlantStoreInputError([{ path: option, message }], "precondition");
  if (list.length === 0) throw refused("must name at least one entity tag");
  for (const tag of list) {
    if (typeof tag !== "string" || !ENTITY_TAG.test(tag))
      throw refused(
        `must be "*" or entity tags as an ETag header gives them, quotes included (got ${JSON.stringify(tag)})`,
      );
  }
  return list.join(", ");
}

/** The `ETag` of an answer that must carry one (200, 201, 304); a missing or malformed one breaks the interface. */
export function requiredETag(response: Response): string {
  const etag = response.headers.get("etag");
  if (etag === null || !ENTITY_TAG.test(etag)) {
    throw new PlantStoreProtocolError(
      `HTTP ${response.status}: ${etag === null ? "no ETag header" : `the ETag header is not an entity tag: ${etag}`}`,
      { status: response.status },
    );
  }
  return etag;
}

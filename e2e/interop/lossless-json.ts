/**
 * What the served document asks of a JavaScript caller whose ids may exceed 2^53: read and write
 * JSON integers exactly. Plain `JSON.parse` rounds 9007199254740993 to 9007199254740992, and
 * `JSON.stringify` cannot write a bigint. Node ≥ 22 and current browsers have what it takes.
 */

type SourceContext = { source?: string };
const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/** `JSON.parse`, with every integer beyond 2^53 as an exact bigint (read from its source text). */
export function parseLossless(text: string): unknown {
  return JSON.parse(text, (_key: string, value: unknown, context?: SourceContext) =>
    typeof value === "number" &&
    !Number.isSafeInteger(value) &&
    context?.source !== undefined &&
    /^-?\d+$/.test(context.source)
      ? BigInt(context.source)
      : value,
  );
}

/** `JSON.stringify`, writing bigints as JSON integers with all their digits. */
export function stringifyLossless(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === "bigint" ? rawJSON(item.toString()) : item));
}

/**
 * JSON text with every integer beyond 2^53 turned into a string of its digits, for a client that
 * parses with plain `JSON.parse` and converts ids with `BigInt(…)` afterwards (hey-api's bigInt
 * transformers): the digits survive its parse.
 */
export function quoteBigIntegers(text: string): string {
  return JSON.stringify(parseLossless(text), (_key, item: unknown) =>
    typeof item === "bigint" ? item.toString() : item,
  );
}

/** The `after` of a `Link: <…>; rel="next"` header's target, or undefined on the last page. */
export function nextAfter(link: string | null): string | undefined {
  if (link === null) return undefined;
  const next = /<([^>]*)>\s*;\s*rel="?next"?/i.exec(link);
  if (next === null) return undefined;
  // The target is relative to the request; only its query matters here.
  return new URL(next[1]!, "http://target.invalid/").searchParams.get("after") ?? undefined;
}

/**
 * JSON with exact 64-bit integers, without a dependency: Node >= 22 and current browsers hand the
 * reviver each literal's source text (`context.source`) and accept `JSON.rawJSON` on output.
 * Integer literals (`-?digits`, no fraction or exponent) become `bigint`; every other number stays
 * a `number`, so `7.0` or `1e3` are still refused where an int64 is required.
 */
const INTEGER_LITERAL = /^-?(?:0|[1-9]\d*)$/;

type ReviverContext = { source?: string };

function reviveIntegers(this: unknown, _key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value === "number" && context?.source !== undefined && INTEGER_LITERAL.test(context.source)) {
    return BigInt(context.source);
  }
  return value;
}

export function parseJsonLossless(text: string): unknown {
  return JSON.parse(text, reviveIntegers as (key: string, value: unknown) => unknown);
}

type JsonWithRaw = typeof JSON & { rawJSON(text: string): unknown };

function writeBigInts(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? (JSON as JsonWithRaw).rawJSON(value.toString()) : value;
}

export function stringifyJsonLossless(value: unknown): string {
  return JSON.stringify(value, writeBigInts);
}

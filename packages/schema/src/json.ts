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

/** Integer literals of at most 15 digits are exact as a `number` (2^53 has 16 digits). */
const SAFE_DIGITS = 15;

/**
 * True when every number literal outside strings is an integer literal short enough to be exact
 * as a `number`. Then a plain `JSON.parse` loses nothing, and its numbers can become bigints
 * afterwards. A reviver makes V8 keep every literal's source text, which measured 10 times slower
 * than the plain parse for a `NewPlant` body: this is the hot path of every `POST /plants`.
 * The answer only matters for valid JSON; invalid text is refused by `JSON.parse` either way.
 */
function onlyShortIntegers(text: string): boolean {
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote, stepping over escapes.
      for (i++; i < length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let digits = 0;
      if (c === 0x2d) i++;
      for (; i < length; i++) {
        const d = text.charCodeAt(i);
        if (d < 0x30 || d > 0x39) break;
        digits++;
      }
      if (digits > SAFE_DIGITS) return false;
      const next = text.charCodeAt(i);
      // A fraction or an exponent: this number stays a number, which the reviver path decides.
      if (next === 0x2e || next === 0x65 || next === 0x45) return false;
      i--;
    }
  }
  return true;
}

/**
 * Turns every number into a bigint, in place; only called when every number literal was a short
 * integer. Iterative, with its own stack: JSON.parse accepts nesting thousands deep (a 16 KiB body
 * can hold ~8,000 levels), and a recursive walk would overflow the call stack at a depth that
 * depends on where it is called from.
 */
function numbersToBigInts(root: unknown): unknown {
  if (typeof root === "number") return BigInt(root);
  if (typeof root !== "object" || root === null) return root;
  // JSON.parse builds a tree (no shared or cyclic references), so each container is visited once.
  const pending: object[] = [root];
  for (let container = pending.pop(); container !== undefined; container = pending.pop()) {
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const value: unknown = container[i];
        if (typeof value === "number") container[i] = BigInt(value);
        else if (typeof value === "object" && value !== null) pending.push(value);
      }
      continue;
    }
    const object = container as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const value = object[key];
      // JSON.parse makes an own "__proto__" key for one in the text.
      if (typeof value === "number") ownDataProperty(object, key, BigInt(value));
      else if (typeof value === "object" && value !== null) pending.push(value);
    }
  }
  return root;
}

export function parseJsonLossless(text: string): unknown {
  if (onlyShortIntegers(text)) return numbersToBigInts(JSON.parse(text));
  return JSON.parse(text, reviveIntegers as (key: string, value: unknown) => unknown);
}

type JsonWithRaw = typeof JSON & { rawJSON(text: string): unknown };

function writeBigInts(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? (JSON as JsonWithRaw).rawJSON(value.toString()) : value;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = -MAX_SAFE;

/** Returned by withRawBigInts for shapes it leaves to the replacer (class instances, toJSON). */
const UNSUPPORTED = Symbol("unsupported");

function ownDataProperty(object: Record<string, unknown>, key: string, value: unknown): void {
  // An own "__proto__" key must stay an own property, not reach the prototype setter.
  if (key === "__proto__")
    Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

/**
 * A copy of plain data in which every bigint is a number (when safe) or a `JSON.rawJSON` literal,
 * sharing whatever holds no bigint. `JSON.stringify` of that is about twice as fast as a replacer, which V8 must call
 * for every key (a page of 100 plants has 400).
 */
function withRawBigInts(value: unknown): unknown {
  if (typeof value === "bigint") {
    // A safe integer is written with the same digits as a number, and a number keeps
    // JSON.stringify on its fast path: a page of 100 plants took 29 µs with a rawJSON object per
    // id and 12.5 µs this way. Only ids beyond 2^53 need the raw literal.
    return value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : (JSON as JsonWithRaw).rawJSON(value.toString());
  }
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const converted = withRawBigInts(value[i]);
      if (converted === UNSUPPORTED) return UNSUPPORTED;
      if (converted !== value[i]) (copy ??= value.slice())[i] = converted;
    }
    return copy ?? value;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return UNSUPPORTED;
  const object = value as Record<string, unknown>;
  if (typeof object["toJSON"] === "function") return UNSUPPORTED;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(object)) {
    const converted = withRawBigInts(object[key]);
    if (converted === UNSUPPORTED) return UNSUPPORTED;
    if (converted !== object[key]) ownDataProperty((copy ??= { ...object }), key, converted);
  }
  return copy ?? object;
}

export function stringifyJsonLossless(value: unknown): string {
  const converted = withRawBigInts(value);
  return converted === UNSUPPORTED ? JSON.stringify(value, writeBigInts) : JSON.stringify(converted);
}

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
 * The deepest nesting of arrays and objects accepted (`{"id":1}` is one level). V8 applies a
 * reviver recursively and ran out of stack near 2,300 levels from the top of the stack and near
 * 1,300 from 5,000 frames down; 512 leaves room for whatever calls us, and no body of this
 * interface needs more than one.
 */
export const MAX_JSON_DEPTH = 512;

/** Valid JSON nested deeper than {@link MAX_JSON_DEPTH}: refused before anything recurses into it. */
export class JsonTooDeepError extends Error {
  readonly maxDepth: number;

  constructor(maxDepth: number) {
    super(`nested deeper than ${maxDepth} levels`);
    this.maxDepth = maxDepth;
    this.name = "JsonTooDeepError";
  }
}

const ONLY_SHORT_INTEGERS = 0;
const OTHER_NUMBERS = 1;
const TOO_DEEP = 2;

/**
 * One pass over the text, outside strings: is it nested deeper than MAX_JSON_DEPTH, and is every
 * number literal an integer short enough to be exact as a `number`? Then a plain `JSON.parse`
 * loses nothing, and its numbers can become bigints afterwards. A reviver makes V8 keep every
 * literal's source text, which measured 10 times slower than the plain parse for a `NewPlant`
 * body: this is the hot path of every `POST /plants`.
 * The answer only matters for valid JSON; invalid text is refused by `JSON.parse` either way.
 */
function scan(text: string): typeof ONLY_SHORT_INTEGERS | typeof OTHER_NUMBERS | typeof TOO_DEEP {
  const length = text.length;
  let depth = 0;
  let shortIntegers = true;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote, stepping over escapes.
      for (i++; i < length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return TOO_DEEP;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    } else if (shortIntegers && (c === 0x2d || (c >= 0x30 && c <= 0x39))) {
      let digits = 0;
      if (c === 0x2d) i++;
      for (; i < length; i++) {
        const d = text.charCodeAt(i);
        if (d < 0x30 || d > 0x39) break;
        digits++;
      }
      const next = text.charCodeAt(i);
      // A fraction or an exponent: this number stays a number, which the reviver path decides.
      if (digits > SAFE_DIGITS || next === 0x2e || next === 0x65 || next === 0x45) shortIntegers = false;
      i--;
    }
  }
  return shortIntegers ? ONLY_SHORT_INTEGERS : OTHER_NUMBERS;
}

/**
 * Turns every number into a bigint, in place; only called when every number literal was a short
 * integer. Iterative, with its own stack, so that it never adds to the call stack whatever the
 * depth it is given.
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

/**
 * Parses JSON with every integer literal as an exact `bigint`. Throws a SyntaxError for invalid
 * JSON and a {@link JsonTooDeepError} for valid JSON nested deeper than {@link MAX_JSON_DEPTH}.
 */
export function parseJsonLossless(text: string): unknown {
  const found = scan(text);
  if (found === TOO_DEEP) {
    // Invalid text is refused as invalid, whatever its depth. JSON.parse without a reviver does not
    // recurse, so this cannot overflow; it only runs for texts already refused.
    JSON.parse(text);
    throw new JsonTooDeepError(MAX_JSON_DEPTH);
  }
  if (found === ONLY_SHORT_INTEGERS) return numbersToBigInts(JSON.parse(text));
  return JSON.parse(text, reviveIntegers);
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
  const prototype: unknown = Object.getPrototypeOf(value);
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

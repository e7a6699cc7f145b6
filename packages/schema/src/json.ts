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

/**
 * Valid JSON with an object that has a member name twice: refused rather than read as
 * `JSON.parse` reads it (the last one wins), since another reader of the same text (a proxy, a
 * log pipeline, another language's parser) may take the first, and see another value.
 * I-JSON (RFC 7493 §2.3) forbids such objects; RFC 8259 §4 leaves their meaning to each parser.
 */
export class JsonDuplicateNameError extends Error {
  readonly memberName: string;

  constructor(memberName: string) {
    const shown = memberName.length > 64 ? `${memberName.slice(0, 64)}…` : memberName;
    super(`has the member ${JSON.stringify(shown)} more than once`);
    this.memberName = memberName;
    this.name = "JsonDuplicateNameError";
  }
}

const ONLY_SHORT_INTEGERS = 0;
const OTHER_NUMBERS = 1;
const TOO_DEEP = 2;

type Scanned = {
  kind: typeof ONLY_SHORT_INTEGERS | typeof OTHER_NUMBERS | typeof TOO_DEEP;
  /** The members of every object in the text: one `:` outside strings each. */
  members: number;
};

/**
 * One pass over the text, outside strings: is it nested deeper than MAX_JSON_DEPTH, is every
 * number literal an integer short enough to be exact as a `number`, and how many object members
 * does it hold? Then a plain `JSON.parse` loses nothing, and its numbers can become bigints
 * afterwards. A reviver makes V8 keep every literal's source text, which measured 10 times slower
 * than the plain parse for a `NewPlant` body: this is the hot path of every `POST /plants`.
 * The answer only matters for valid JSON; invalid text is refused by `JSON.parse` either way.
 */
function scan(text: string): Scanned {
  const length = text.length;
  let depth = 0;
  let shortIntegers = true;
  let members = 0;
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
      if (++depth > MAX_JSON_DEPTH) return { kind: TOO_DEEP, members };
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    } else if (c === 0x3a) {
      members++;
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
  return { kind: shortIntegers ? ONLY_SHORT_INTEGERS : OTHER_NUMBERS, members };
}

/**
 * Counts the members of every object in a parsed tree and, with `toBigInts` (only when every
 * number literal was a short integer), turns every number into a bigint in place. Fewer members
 * than the text has means `JSON.parse` folded a name given twice. Iterative, with its own stack,
 * so that it never adds to the call stack whatever the depth it is given.
 */
function walk(root: unknown, toBigInts: boolean): number {
  if (typeof root !== "object" || root === null) return 0;
  let members = 0;
  // JSON.parse builds a tree (no shared or cyclic references), so each container is visited once.
  const pending: object[] = [root];
  for (let container = pending.pop(); container !== undefined; container = pending.pop()) {
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const value: unknown = container[i];
        if (typeof value === "number") {
          if (toBigInts) container[i] = BigInt(value);
        } else if (typeof value === "object" && value !== null) pending.push(value);
      }
      continue;
    }
    const object = container as Record<string, unknown>;
    const keys = Object.keys(object);
    members += keys.length;
    for (const key of keys) {
      const value = object[key];
      // JSON.parse makes an own "__proto__" key for one in the text.
      if (typeof value === "number") {
        if (toBigInts) ownDataProperty(object, key, BigInt(value));
      } else if (typeof value === "object" && value !== null) pending.push(value);
    }
  }
  return members;
}

/**
 * The first member name given twice in one object of `text`, which is valid JSON known to have
 * one. Only run to say which name it is: the count in `scan` and `walk` is what finds that there is one.
 */
function firstDuplicateName(text: string): string {
  // The names seen in each open object; undefined for an open array.
  const open: Array<Set<string> | undefined> = [];
  let nameNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
      if (!nameNext) continue;
      nameNext = false;
      const name = JSON.parse(text.slice(start, i + 1)) as string;
      const names = open.at(-1)!;
      if (names.has(name)) return name;
      names.add(name);
    } else if (c === 0x7b) {
      open.push(new Set());
      nameNext = true;
    } else if (c === 0x5b) {
      open.push(undefined);
    } else if (c === 0x5d || c === 0x7d) {
      open.pop();
    } else if (c === 0x2c) {
      nameNext = open.at(-1) !== undefined;
    }
  }
  throw new Error("no member name is given twice");
}

/**
 * Parses JSON with every integer literal as an exact `bigint`. Throws a SyntaxError for invalid
 * JSON, a {@link JsonTooDeepError} for valid JSON nested deeper than {@link MAX_JSON_DEPTH}, and
 * a {@link JsonDuplicateNameError} for valid JSON with an object that has a member name twice.
 */
export function parseJsonLossless(text: string): unknown {
  const { kind, members } = scan(text);
  if (kind === TOO_DEEP) {
    // Invalid text is refused as invalid, whatever its depth. JSON.parse without a reviver does not
    // recurse, so this cannot overflow; it only runs for texts already refused.
    JSON.parse(text);
    throw new JsonTooDeepError(MAX_JSON_DEPTH);
  }
  const shortIntegers = kind === ONLY_SHORT_INTEGERS;
  const value: unknown = shortIntegers ? JSON.parse(text) : JSON.parse(text, reviveIntegers);
  if (walk(value, shortIntegers) !== members) throw new JsonDuplicateNameError(firstDuplicateName(text));
  return shortIntegers && typeof value === "number" ? BigInt(value) : value;
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

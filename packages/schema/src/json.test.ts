import { describe, expect, it } from "vitest";

import {
  JsonDuplicateNameError,
  JsonTooDeepError,
  MAX_JSON_DEPTH,
  parseJsonLossless,
  stringifyJsonLossless,
} from "./json.ts";

describe("parseJsonLossless", () => {
  it("turns integer literals into exact bigints across the int64 range and beyond", () => {
    expect(parseJsonLossless('{"a":9223372036854775807,"b":-9223372036854775808,"c":9007199254740993}')).toEqual({
      a: 9223372036854775807n,
      b: -9223372036854775808n,
      c: 9007199254740993n,
    });
  });

  it("leaves fractions and exponents as numbers, so an int64 schema can refuse them", () => {
    expect(parseJsonLossless("[7.0, 1e3, 7.5, -0.0]")).toEqual([7, 1000, 7.5, -0]);
  });

  it("keeps strings that look like numbers as strings", () => {
    expect(parseJsonLossless('{"id":"7"}')).toEqual({ id: "7" });
  });
});

describe("parseJsonLossless and duplicate names", () => {
  it.each([
    ['{"id":6998,"id":6997,"name":"x"}', "id"],
    ['{"id":1,"name":"a","name":"b"}', "name"],
    ['{"id":1.5,"id":2}', "id"],
    ['{"a":{"b":1,"c":{"d":[{"e":1,"e":2}]}}}', "e"],
    ['[{"x":1},{"y":2,"y":2}]', "y"],
    ['{"__proto__":{},"__proto__":{}}', "__proto__"],
    ['{"\\u0069d":1,"id":2}', "id"],
    ['{"a":{"k":"v"},"a":{"k":"v"}}', "a"],
  ])("refuses %s, naming %j, on the fast path and the reviver's alike", (text, name) => {
    expect(() => parseJsonLossless(text)).toThrow(JsonDuplicateNameError);
    expect(() => parseJsonLossless(text)).toThrow(`"${name}"`);
    // A number the fast path cannot take sends the same text down the reviver's path.
    expect(() => parseJsonLossless(`[1e3,${text}]`)).toThrow(JsonDuplicateNameError);
  });

  it("accepts one name in sibling or nested objects, and names that only look alike", () => {
    expect(parseJsonLossless('{"a":{"id":1},"b":{"id":2},"id":3}')).toEqual({ a: { id: 1n }, b: { id: 2n }, id: 3n });
    expect(parseJsonLossless('{"id":1,"Id":2,"id ":3,"i\\"d":4}')).toEqual({ id: 1n, Id: 2n, "id ": 3n, 'i"d': 4n });
    expect(parseJsonLossless('{"s":"\\"id\\":1,\\"id\\":2","id":0}')).toEqual({ s: '"id":1,"id":2', id: 0n });
  });

  it("refuses duplicates before a depth-limited value is returned, and still says too deep first", () => {
    const deep = `${"[".repeat(MAX_JSON_DEPTH)}{"a":1,"a":2}${"]".repeat(MAX_JSON_DEPTH)}`;
    expect(() => parseJsonLossless(deep)).toThrow(JsonTooDeepError);
    const deepest = `${"[".repeat(MAX_JSON_DEPTH - 1)}{"a":1,"a":2}${"]".repeat(MAX_JSON_DEPTH - 1)}`;
    expect(() => parseJsonLossless(deepest)).toThrow(JsonDuplicateNameError);
  });

  it("shortens a long name in the message", () => {
    const long = "n".repeat(1_000);
    expect(() => parseJsonLossless(`{"${long}":1,"${long}":2}`)).toThrow(/^has the member "n{64}…" more than once$/);
  });
});

describe("stringifyJsonLossless", () => {
  it("writes bigints as exact JSON integers", () => {
    expect(stringifyJsonLossless({ id: -9223372036854775808n, name: "x" })).toBe(
      '{"id":-9223372036854775808,"name":"x"}',
    );
  });

  it("round-trips through parseJsonLossless", () => {
    const value = { id: 9223372036854775807n, list: [1n, 2.5, "3"] };
    expect(parseJsonLossless(stringifyJsonLossless(value))).toEqual(value);
  });
});

/** The reviver-only parse, as it was before the fast path: the fast path must agree with it exactly. */
function reference(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }): unknown =>
    typeof value === "number" && context?.source !== undefined && /^-?(?:0|[1-9]\d*)$/.test(context.source)
      ? BigInt(context.source)
      : value,
  );
}

describe("parseJsonLossless fast path (plain JSON.parse when every number is a short integer)", () => {
  const cases = [
    '{"id":123,"name":"Fern","tag":"fern"}',
    '{"a":[1,[2,{"b":-3}]],"s":"1.5e3 \\" 7.0 -12 \\\\","t":"\\u0031e5"}',
    '  { "a" : 12 , "b":"\\\\" , "c" : [ ] }  ',
    "[-0, 0, 7, 999999999999999, -999999999999999]",
    "[9999999999999999, 9007199254740993, -9223372036854775808]",
    '{"x":1.0,"y":1e3,"z":-2E-1,"w":7}',
    '{"x":true,"y":false,"z":null,"n":12}',
    '"just a string with 1.5 inside"',
    "42",
    "[]",
  ];
  for (const text of cases) {
    it(`agrees with the reviver on ${text}`, () => {
      expect(parseJsonLossless(text)).toStrictEqual(reference(text));
    });
  }

  it("keeps an own __proto__ key as data, never as the prototype", () => {
    const parsed = parseJsonLossless('{"__proto__":{"polluted":1},"id":5}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(parsed, "__proto__")?.value).toEqual({ polluted: 1n });
    expect(parsed["id"]).toBe(5n);
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
  });

  it("still refuses what JSON.parse refuses", () => {
    for (const text of ['{"a":01}', '{"a":-}', '{"a":1', "", '{"a":"unterminated}']) {
      expect(() => parseJsonLossless(text), text).toThrow(SyntaxError);
    }
  });
});

describe("parseJsonLossless and nesting depth", () => {
  const nested = (depth: number, inner: string) => `${"[".repeat(depth - 1)}{"id":${inner}}${"]".repeat(depth - 1)}`;
  const innermost = (value: unknown, depth: number) => {
    for (let i = 1; i < depth; i++) value = (value as unknown[])[0];
    return (value as { id: unknown }).id;
  };
  /** Calls `run` from `frames` calls down, as a handler deep in a server's middleware would. */
  const fromDeepInTheStack = <T>(frames: number, run: () => T): T =>
    frames === 0 ? run() : fromDeepInTheStack(frames - 1, run);

  // 16 digits: the reviver path, whose recursion overflowed the stack on deep texts (issue 23).
  it.each([
    ["short integers (plain parse)", "7", 7n],
    ["a 16-digit integer (reviver)", "9007199254740993", 9007199254740993n],
  ])("parses %s nested exactly MAX_JSON_DEPTH deep, from 5,000 frames down", (_path, inner, expected) => {
    const parsed = fromDeepInTheStack(5_000, () => parseJsonLossless(nested(MAX_JSON_DEPTH, inner)));
    expect(innermost(parsed, MAX_JSON_DEPTH)).toBe(expected);
  });

  it.each([
    ["short integers", MAX_JSON_DEPTH + 1, "7"],
    ["a 16-digit integer", MAX_JSON_DEPTH + 1, "9007199254740993"],
    ["a 16-digit integer", 10_000, "9007199254740993"],
    ["short integers", 200_000, "7"],
    ["a 16-digit integer", 200_000, "9007199254740993"],
    ["a fraction", 200_000, "7.5"],
  ])("refuses %s nested %i deep as too deep, never overflowing the stack", (_what, depth, inner) => {
    const parse = () => fromDeepInTheStack(1_000, () => parseJsonLossless(nested(depth, inner)));
    expect(parse).toThrow(JsonTooDeepError);
    expect(parse).toThrow(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it("counts nesting, not brackets: siblings and brackets inside strings are not levels", () => {
    const siblings = `[${Array.from({ length: 5_000 }, (_, i) => `[${i}]`).join(",")}]`;
    expect((parseJsonLossless(siblings) as unknown[]).length).toBe(5_000);
    const inString = `{"id":9007199254740993,"s":"${"[{".repeat(5_000)}"}`;
    expect((parseJsonLossless(inString) as { id: bigint }).id).toBe(9007199254740993n);
  });

  it("refuses invalid text as invalid, however deep", () => {
    expect(() => parseJsonLossless("[".repeat(10_000))).toThrow(SyntaxError);
    expect(() => parseJsonLossless(`${"[".repeat(10_000)}9007199254740993${"]".repeat(9_999)}`)).toThrow(SyntaxError);
  });
});

describe("stringifyJsonLossless without a replacer", () => {
  const replaced = (value: unknown) =>
    JSON.stringify(value, (_key, v: unknown) =>
      typeof v === "bigint" ? (JSON as unknown as { rawJSON(t: string): unknown }).rawJSON(v.toString()) : v,
    );

  it("writes the same text as the replacer for plain data", () => {
    const values: unknown[] = [
      { name: "Fern", tag: "fern" },
      Array.from({ length: 5 }, (_, i) => ({ id: BigInt(i) * 2n ** 62n, name: `p${i}`, tag: i % 2 ? undefined : "t" })),
      { nested: { list: [1n, [2n, { deep: -3n }]], n: 1.5, s: "x", skip: undefined, nil: null } },
      Object.assign(Object.create(null) as Record<string, unknown>, { id: 9n }),
      [undefined, () => 1, 3n],
      7n,
      "text",
      // Either side of the safe-integer edge, where numbers stop being exact.
      [
        0n,
        -0n,
        2n ** 53n - 1n,
        2n ** 53n,
        2n ** 53n + 1n,
        -(2n ** 53n) + 1n,
        -(2n ** 53n),
        -(2n ** 53n) - 1n,
        2n ** 63n - 1n,
        -(2n ** 63n),
      ],
    ];
    for (const value of values) expect(stringifyJsonLossless(value)).toBe(replaced(value));
  });

  it("leaves class instances and toJSON to JSON.stringify's own rules", () => {
    const date = new Date(0);
    expect(stringifyJsonLossless({ at: date, id: 1n })).toBe(`{"at":"${date.toISOString()}","id":1}`);
    expect(stringifyJsonLossless({ toJSON: () => ({ id: 2n }) })).toBe('{"id":2}');
  });

  it("keeps an own __proto__ key as data", () => {
    const value = JSON.parse('{"__proto__":1,"id":0}') as Record<string, unknown>;
    value["id"] = 5n;
    expect(stringifyJsonLossless(value)).toBe('{"__proto__":1,"id":5}');
    const withBigProto = JSON.parse('{"__proto__":0}') as Record<string, unknown>;
    Object.defineProperty(withBigProto, "__proto__", { value: 3n, enumerable: true });
    expect(stringifyJsonLossless(withBigProto)).toBe('{"__proto__":3}');
  });

  it("does not change the value it writes", () => {
    const value = { id: 1n, list: [2n] };
    stringifyJsonLossless(value);
    expect(value).toStrictEqual({ id: 1n, list: [2n] });
  });
});

describe("parseJsonLossless against the reviver on generated JSON", () => {
  // A small deterministic generator (mulberry32), so a failure reproduces.
  let seed = 0x5eed;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)]!;
  const digits = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      i === 0 ? String(1 + Math.floor(random() * 9)) : String(Math.floor(random() * 10)),
    ).join("");
  const number = () =>
    pick([
      () => digits(1 + Math.floor(random() * 20)),
      () => `-${digits(1 + Math.floor(random() * 20))}`,
      () => "0",
      () => "-0",
      () => `${digits(3)}.${digits(2)}`,
      () => `${digits(2)}e${pick(["", "+", "-"])}${digits(1)}`,
      () => `${digits(1)}E2`,
    ])();
  const string = () =>
    JSON.stringify(pick(["", "a", "1.5e3", '"quoted"', "back\\slash", "7", "x\u00e9\u{1f331}", "-12"]));
  /** Whether the document being generated has an object with a member name twice. */
  let duplicated = false;
  const object = (depth: number): string => {
    const names = new Set<string>();
    const members = Array.from({ length: Math.floor(random() * 4) }, () => {
      const name = pick(['"id"', '"name"', '"__proto__"', '"a b"', string()]);
      const decoded = JSON.parse(name) as string;
      if (names.has(decoded)) duplicated = true;
      names.add(decoded);
      return `${name}:${value(depth + 1)}`;
    });
    return `{${members.join(",")}}`;
  };
  const value = (depth: number): string => {
    if (depth > 3) return pick([number, string, () => "true", () => "null"])();
    return pick([
      number,
      string,
      () => pick(["true", "false", "null"]),
      () => `[${Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1)).join(", ")}]`,
      () => object(depth),
    ])();
  };

  it("agrees on 2,000 generated documents, and refuses exactly those with a name twice in one object", () => {
    let refused = 0;
    for (let i = 0; i < 2_000; i++) {
      duplicated = false;
      const text = value(0);
      if (duplicated) {
        refused++;
        expect(() => parseJsonLossless(text), text).toThrow(JsonDuplicateNameError);
      } else expect(parseJsonLossless(text), text).toStrictEqual(reference(text));
    }
    expect(refused).toBeGreaterThan(50);
  });
});

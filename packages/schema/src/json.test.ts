import { describe, expect, it } from "vitest";
import { parseJsonLossless, stringifyJsonLossless } from "./json.ts";

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

describe("stringifyJsonLossless", () => {
  it("writes bigints as exact JSON integers", () => {
    expect(stringifyJsonLossless({ id: -9223372036854775808n, name: "x" })).toBe('{"id":-9223372036854775808,"name":"x"}');
  });

  it("round-trips through parseJsonLossless", () => {
    const value = { id: 9223372036854775807n, list: [1n, 2.5, "3"] };
    expect(parseJsonLossless(stringifyJsonLossless(value))).toEqual(value);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { INT64_MAX, INT64_MIN } from "./int64.ts";
import { decodePageCursor, encodePageCursor, PAGE_CURSOR_PATTERN } from "./page-cursor.ts";
import { ListPlantsQuery } from "./query.ts";

describe("the GET /plants cursor", () => {
  it("round-trips every id, from INT64_MIN over 2^53 to INT64_MAX", () => {
    for (const id of [INT64_MIN, -1n, 0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, INT64_MAX - 1n, INT64_MAX]) {
      const cursor = encodePageCursor(id);
      expect(cursor).toMatch(/^v1\.[A-Za-z0-9_-]{11}$/);
      expect(decodePageCursor(cursor)).toBe(id);
    }
  });

  it("is not a number a caller could mistake for an id", () => {
    expect(encodePageCursor(7n)).toBe("v1.AAAAAAAAAAc");
    expect(Number.isNaN(Number(encodePageCursor(7n)))).toBe(true);
  });

  it.each([
    "",
    "v1.",
    "v1.AAAAAAAAAA",
    "v1.AAAAAAAAAAAA",
    "v1.AAAAAAAAAAd",
    "v2.AAAAAAAAAAc",
    "v1.AAAAAAAAA+c",
    " v1.AAAAAAAAAAc",
  ])("refuses %j", (text) => {
    expect(decodePageCursor(text)).toBeUndefined();
  });

  it("is what ListPlantsQuery reads as `after`, besides the decimal id", () => {
    expect(ListPlantsQuery.parse({ after: encodePageCursor(2n ** 53n + 1n) })).toEqual({ after: 2n ** 53n + 1n });
    expect(ListPlantsQuery.parse({ after: "9007199254740993" })).toEqual({ after: 2n ** 53n + 1n });
    expect(ListPlantsQuery.safeParse({ after: "v1.AAAAAAAAAAd" }).success).toBe(false);
    expect(ListPlantsQuery.safeParse({ after: "9223372036854775808" }).success).toBe(false);
    expect(ListPlantsQuery.safeParse({ after: "1.5" }).success).toBe(false);
  });

  describe("PAGE_CURSOR_PATTERN, which the served document gives `after`", () => {
    const pattern = new RegExp(PAGE_CURSOR_PATTERN);
    const int64 = fc.bigInt({ min: INT64_MIN, max: INT64_MAX });

    it("matches every cursor the encoder writes", () => {
      for (const id of [INT64_MIN, -1n, 0n, 1n, 2n ** 53n + 1n, INT64_MAX])
        expect(encodePageCursor(id)).toMatch(pattern);
      fc.assert(
        fc.property(int64, (id) => pattern.test(encodePageCursor(id))),
        { numRuns: 2_000 },
      );
    });

    it("matches nothing else: every text it matches is the cursor of exactly one id", () => {
      fc.assert(
        fc.property(fc.stringMatching(pattern), (text) => {
          const id = decodePageCursor(text);
          return id !== undefined && encodePageCursor(id) === text;
        }),
        { numRuns: 2_000 },
      );
    });

    it.each([
      "v1.AAAAAAAAAAd",
      "v1.AAAAAAAAAA",
      "v1.AAAAAAAAAAAA",
      "v2.AAAAAAAAAAc",
      "v1.AAAAAAAAA+c",
      "v1xAAAAAAAAAAc",
    ])("does not match the forged %j, which ListPlantsQuery refuses in our words", (text) => {
      expect(text).not.toMatch(pattern);
      const parsed = ListPlantsQuery.safeParse({ after: text });
      expect(parsed.error?.issues.map((issue) => issue.message)).toEqual([
        "must be the cursor of a Link header's next link, or a decimal id (int64)",
      ]);
    });
  });
});

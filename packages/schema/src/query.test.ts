import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { encodePageCursor } from "./page-cursor.ts";
import { ListPlantsQuery, PlantIdPath } from "./query.ts";

/** zod's own wording: every message a caller reads must be ours instead (issue 23). */
const ZOD_WORDING = /expected|too big|too small|invalid input/i;

/** What a query or path value can arrive as: text (hostile or not), or an array when repeated. */
const hostileText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 80 }),
  fc.bigInt().map(String),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map((n) => `${n}${"0".repeat(20)}`),
  fc.double().map(String),
  fc.constantFrom("99999999999999999999999", "-99999999999999999999999", "1e400", "Infinity", "NaN", "-0", "0x10"),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((id) => encodePageCursor(id).slice(0, -1) + "z"),
);
const hostileValue = fc.oneof(hostileText, fc.array(hostileText, { minLength: 2, maxLength: 3 }));

function messages(result: { success: boolean; error?: { issues: Array<{ message: string }> } }): string[] {
  return result.success ? [] : result.error!.issues.map((issue) => issue.message);
}

describe("query and path parameters speak the catalogue's voice", () => {
  it.each(["limit", "after", "tag"])("every message about a hostile %s is ours", (name) => {
    fc.assert(
      fc.property(hostileValue, (value) => {
        for (const message of messages(ListPlantsQuery.safeParse({ [name]: value })))
          expect(message).not.toMatch(ZOD_WORDING);
      }),
      { numRuns: 1_000 },
    );
  });

  it("every message about a hostile path id is ours", () => {
    fc.assert(
      fc.property(hostileValue, (value) => {
        for (const message of messages(PlantIdPath.safeParse({ id: value }))) expect(message).not.toMatch(ZOD_WORDING);
      }),
      { numRuns: 1_000 },
    );
  });

  it.each(["-0", "+1", "01", "-01", "00"])("refuses the id %j: one spelling per integer, as for +1 and 01", (id) => {
    expect(messages(PlantIdPath.safeParse({ id }))).toEqual(["must be a decimal integer (int64)"]);
    expect(ListPlantsQuery.safeParse({ after: id }).success).toBe(false);
  });

  it.each(["0", "-1", "10", "-9223372036854775808"])("reads the id %j", (id) => {
    expect(PlantIdPath.parse({ id })).toEqual({ id: BigInt(id) });
  });

  it("says limit's range, once, for a limit beyond 2^53", () => {
    expect(messages(ListPlantsQuery.safeParse({ limit: "99999999999999999999999" }))).toEqual([
      "must be an integer from 1 to 1000",
    ]);
  });

  it.each(["limit", "after", "tag"])("refuses a repeated %s as not a single value", (name) => {
    expect(messages(ListPlantsQuery.safeParse({ [name]: ["1", "2"] }))).toEqual(["must be a single value"]);
  });

  it.each(["limit", "after", "tag"])(
    "still says a %s that is no text at all (from code, not a URL) must be a string",
    (name) => {
      expect(messages(ListPlantsQuery.safeParse({ [name]: 5 }))).toEqual(["must be a string"]);
    },
  );
});

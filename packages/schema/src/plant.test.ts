import { describe, expect, it } from "vitest";

import { INT64_MAX, INT64_MIN, toInt64 } from "./int64.ts";
import { NewPlant, Plant, PlantPatch } from "./plant.ts";

describe("NewPlant", () => {
  it("accepts the int64 bounds as bigint ids", () => {
    expect(NewPlant.parse({ id: INT64_MAX, name: "a" })).toEqual({ id: INT64_MAX, name: "a" });
    expect(NewPlant.parse({ id: INT64_MIN, name: "a" })).toEqual({ id: INT64_MIN, name: "a" });
  });

  it("never coerces: numbers, strings and null are not ids", () => {
    for (const id of [7, "7", null, true, 7.5]) expect(NewPlant.safeParse({ id, name: "a" }).success).toBe(false);
  });

  it("is not coerced by anything else in the process either", () => {
    // trpc-to-openapi's stock adapter flips `coerce` on shared schemas; ours must stay strict.
    expect(NewPlant.safeParse({ id: "7", name: "a" }).success).toBe(false);
  });

  it("strips unknown fields", () => {
    expect(NewPlant.parse({ id: 1n, name: "a", extra: true })).toEqual({ id: 1n, name: "a" });
  });
});

describe("Plant", () => {
  it("has no id", () => {
    expect(Plant.parse({ id: 1n, name: "a", tag: "b" })).toEqual({ name: "a", tag: "b" });
  });
});

describe("PlantPatch", () => {
  it("keeps what is left out, takes null as removing the tag, and checks what is sent like NewPlant", () => {
    expect(PlantPatch.parse({})).toEqual({});
    expect(PlantPatch.parse({ tag: null })).toEqual({ tag: null });
    for (const patch of [{ name: null }, { name: "" }, { tag: "" }, { tag: 7 }, { name: "\u0000" }])
      expect(PlantPatch.safeParse(patch).success, JSON.stringify(patch)).toBe(false);
  });
});

describe("PlantPatch, unlike NewPlant", () => {
  it("refuses an unknown field rather than dropping it: a misspelt one would change nothing", () => {
    const result = PlantPatch.safeParse({ name: "a", nmae: "b" });
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).toContain("nmae");
  });
});

describe("toInt64", () => {
  it("accepts safe integers and bigints, refuses unsafe numbers", () => {
    expect(toInt64(7)).toBe(7n);
    expect(toInt64(2n ** 60n)).toBe(2n ** 60n);
    expect(() => toInt64(2 ** 53)).toThrow(RangeError);
    expect(() => toInt64(1.5)).toThrow(RangeError);
  });
});

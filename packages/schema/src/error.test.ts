import { describe, expect, it } from "vitest";

import { Error as ErrorSchema, ErrorBody } from "./index.ts";

describe("Error", () => {
  it("is exported under the interface's name and as ErrorBody, one schema", () => {
    expect(ErrorSchema).toBe(ErrorBody);
  });

  it("is exactly an int32 error and a message", () => {
    expect(ErrorSchema.parse({ error: 40900, message: "taken" })).toEqual({ error: 40900, message: "taken" });
    for (const error of [2 ** 31, -(2 ** 31) - 1, 1.5, "400"]) {
      expect(ErrorSchema.safeParse({ error, message: "m" }).success).toBe(false);
    }
    expect(ErrorSchema.safeParse({ error: 400 }).success).toBe(false);
  });
});

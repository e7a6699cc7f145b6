import { afterEach, beforeEach, vi } from "vitest";

// Stray console output in a test run is a bug in the code or the test: fail on it (zod's habit).
let calls: string[] = [];
beforeEach(() => {
  calls = [];
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      calls.push(`console.${method}: ${args.map(String).join(" ")}`);
    });
  }
});
afterEach(() => {
  vi.restoreAllMocks();
  if (calls.length > 0) throw new Error(`unexpected console output:\n${calls.join("\n")}`);
});

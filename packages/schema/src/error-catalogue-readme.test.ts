import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { type ErrorCodeName, ErrorCodes } from "./error-codes.ts";

/**
 * The README's error catalogue is what users of the published package read (it ships in the
 * tarball), while `ErrorCodes` is what the server sends: the two must say the same thing, row for
 * entry, so neither can gain, lose or reword a code without the other.
 */

type Row = { error: number; name: string; status: number; meaning: string };

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** The rows of the table under `## Error catalogue`: `| error | name | status | meaning | more |`. */
function catalogueRows(markdown: string): Row[] {
  const start = markdown.indexOf("\n## Error catalogue\n");
  if (start < 0) throw new Error('README.md has no "## Error catalogue" section');
  const rest = markdown.slice(start + 1);
  const end = rest.slice(1).search(/\n#{1,2} /);
  const section = end < 0 ? rest : rest.slice(0, end + 1);
  const lines = section.split("\n").filter((line) => line.startsWith("|"));
  const [header, rule, ...body] = lines;
  expect(header?.split("|").map((cell) => cell.trim())).toEqual(["", "error", "name", "status", "meaning", "more", ""]);
  expect(rule).toMatch(/^\|( -+ \|)+$/);
  return body.map((line) => {
    const cells = line.split("|").map((cell) => cell.trim());
    expect(cells, line).toHaveLength(7);
    const [, error, name, status, meaning] = cells as [string, string, string, string, string];
    expect(error, line).toMatch(/^\d+$/);
    expect(name, line).toMatch(/^`[A-Z_]+`$/);
    expect(status, line).toMatch(/^\d{3}$/);
    return { error: Number(error), name: name.slice(1, -1), status: Number(status), meaning };
  });
}

const rows = catalogueRows(README);
const entries: Row[] = (Object.keys(ErrorCodes) as ErrorCodeName[]).map((name) => ({ name, ...ErrorCodes[name] }));

describe("README: error catalogue", () => {
  it("has a row for every ErrorCodes entry, with its code, status and meaning", () => {
    for (const entry of entries) {
      expect(
        rows.filter((row) => row.name === entry.name),
        entry.name,
      ).toEqual([entry]);
    }
  });

  it("has no row that is not an ErrorCodes entry, and no code twice", () => {
    for (const row of rows) {
      expect(entries, `README row ${row.error} ${row.name}`).toContainEqual(row);
    }
    expect(new Set(rows.map((row) => row.error)).size).toBe(rows.length);
    expect(rows).toHaveLength(entries.length);
  });

  it("lists the codes in ascending order", () => {
    const codes = rows.map((row) => row.error);
    expect(codes).toEqual([...codes].sort((a, b) => a - b));
  });
});

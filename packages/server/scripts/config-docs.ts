import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { allSettings, type Setting } from "../src/config.ts";

/**
 * The README's configuration table is generated from `SETTINGS` in src/config.ts, between two
 * markers; src/config-docs.test.ts fails when they differ.
 *
 *   pnpm --filter @plantstore/server config:docs   rewrite the table in README.md
 */
export const README_FILE = fileURLToPath(new URL("../README.md", import.meta.url));

const START = "<!-- configuration table: generated from src/config.ts by `pnpm config:docs` -->";
const END = "<!-- end of configuration table -->";

function defaultCell(entry: Setting): string {
  if (entry.default === undefined) return "(unset)";
  if (entry.default === "") return "(empty)";
  return `\`${entry.default}\``;
}

export function configTable(): string {
  const rows = allSettings().map((entry) => `| \`${entry.env}\` | ${defaultCell(entry)} | ${entry.help} |`);
  return ["| variable | default | meaning |", "| --- | --- | --- |", ...rows].join("\n");
}

function markers(readme: string): { start: number; end: number } {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start === -1 || end < start) throw new Error(`README.md lacks the markers ${START} … ${END}`);
  return { start: start + START.length, end };
}

/** The table the README holds now. */
export function readmeConfigTable(readme: string): string {
  const { start, end } = markers(readme);
  return readme.slice(start, end).trim();
}

/**
 * A table as its cells say it: prettier pads the columns and writes the separator row to the
 * widest cell, which changes no cell, so the comparison ignores both.
 */
export function tableCells(table: string): string {
  return table
    .split("\n")
    .map((line) =>
      line
        .split("|")
        .map((cell) => cell.trim())
        .map((cell) => (/^-+$/.test(cell) ? "---" : cell))
        .join("|"),
    )
    .join("\n");
}

/** `readme` with the text between the markers replaced by the generated table. */
export function withConfigTable(readme: string): string {
  const { start, end } = markers(readme);
  return `${readme.slice(0, start)}\n\n${configTable()}\n\n${readme.slice(end)}`;
}

if (import.meta.main) {
  writeFileSync(README_FILE, withConfigTable(readFileSync(README_FILE, "utf8")));
  // The repository's formatter lays the table out (padded columns), as `pnpm format` would.
  execFileSync("pnpm", ["exec", "prettier", "--write", README_FILE], { stdio: "inherit" });
  process.stdout.write(`wrote the configuration table in ${README_FILE}\n`);
}

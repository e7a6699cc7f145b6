import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

import { describe, expect, it } from "vitest";

import { WEB_DIST } from "./support/console-server.ts";

/** The budget of the issue: the JavaScript a first visit loads, gzipped, in kB (1000 bytes, as Vite reports). */
const INITIAL_JS_BUDGET_KB = 150;

/** The scripts index.html loads at once: its module entries and the chunks it preloads. */
function initialScripts(indexHtml: string): string[] {
  const scripts = [...indexHtml.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((match) => match[1]!);
  const preloads = [...indexHtml.matchAll(/<link\b[^>]*\brel="modulepreload"[^>]*\bhref="([^"]+)"/g)].map(
    (match) => match[1]!,
  );
  return [...scripts, ...preloads];
}

describe("the built console (dist/)", () => {
  it(`loads at most ${INITIAL_JS_BUDGET_KB} kB of JavaScript (gzip) on a first visit`, () => {
    const scripts = initialScripts(readFileSync(join(WEB_DIST, "index.html"), "utf8"));
    expect(scripts.length).toBeGreaterThan(0);
    const gzipped = scripts.map((src) => {
      expect(src).toMatch(/^\/app\/assets\/[\w.-]+\.js$/);
      return gzipSync(readFileSync(join(WEB_DIST, src.slice("/app/".length)))).length;
    });
    const totalKb = gzipped.reduce((sum, size) => sum + size, 0) / 1000;
    expect(totalKb).toBeLessThanOrEqual(INITIAL_JS_BUDGET_KB);
  });
});

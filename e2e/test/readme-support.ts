import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

import type { RunningServer } from "@plantstore/server";
import * as plantStoreServer from "@plantstore/server";
import { type RealServer, startRealServer } from "@plantstore/test-support/real-server";
import { afterAll, beforeAll } from "vitest";

import { cleanEnv, ROOT, runOk } from "./workspace.ts";

// What the README tests share: a README's sections and code blocks, run as a reader would.

/** Where the examples point; the tests point them at a real server instead. */
export const EXAMPLE_URL = "http://127.0.0.1:3000";

export const readme = (path: string) => readFileSync(join(ROOT, path), "utf8");

/**
 * The text under a heading (any level, given without its `#`s), up to the next heading of the same
 * or a higher level. Lines in code blocks are not headings: a `# …` there is a shell comment.
 */
export function section(markdown: string, title: string): string {
  const lines = markdown.split("\n");
  let inCode = false;
  let start = -1;
  let level = 0;
  for (const [index, line] of lines.entries()) {
    if (line.startsWith("```")) inCode = !inCode;
    const heading = inCode ? null : /^(#{1,6}) (.*)$/.exec(line);
    if (heading === null) continue;
    if (start >= 0 && heading[1]!.length <= level) return lines.slice(start, index).join("\n");
    if (start < 0 && heading[2] === title) [start, level] = [index + 1, heading[1]!.length];
  }
  if (start < 0) throw new Error(`no "${title}" heading`);
  return lines.slice(start).join("\n");
}

/** The fenced code blocks of one language (`""`: blocks without one) in a piece of Markdown. */
export function codeBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, "gm"))].map((m) => m[1]!);
}

/** What an example says it prints: its lines that are whole comments, without the `# `. */
export const printedLines = (block: string) =>
  block
    .split("\n")
    .filter((line) => line.startsWith("# "))
    .map((line) => line.slice(2));

/** The command lines of a shell example, each with what the `# …` lines right after it say it prints. */
export function commandsAndOutput(block: string): Array<{ command: string; shown: string[] }> {
  const steps: Array<{ command: string; shown: string[] }> = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("# ")) steps.at(-1)?.shown.push(line.slice(2));
    else if (line !== "") steps.push({ command: line, shown: [] });
  }
  return steps;
}

/** Ids and times are each run's own: 16 hex digits stand for any id, an RFC 3339 UTC time for any time. */
export const anyIdOrTime = (text: string) =>
  text.replaceAll(/\b[0-9a-f]{16}\b/g, "<id>").replaceAll(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\b/g, "<time>");

/** An ETag as the READMEs show one: 27 base64url characters in quotes (escaped as `\"…\"` inside JSON). */
const SHOWN_ETAG = /(?<=")[A-Za-z0-9_-]{27}(?=\\?")/g;

const escapeRegExp = (text: string) => text.replaceAll(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The ETags a README shows stand for the ones the reader's server answers: each store keys its
 * own, so no run prints the README's. They are paired as a reader pairs them, in order: a tag the
 * README shows where the run printed one stands for that one from then on, in what later lines
 * send as in what they print. Tags the README tells apart must differ in the run, and a tag it
 * repeats must be repeated there, so the examples still say which revision is which.
 */
export class ShownETags {
  readonly #run = new Map<string, string>();

  /** `text` with each README tag paired so far replaced by the run's. */
  inRun(text: string): string {
    return text.replaceAll(SHOWN_ETAG, (tag) => this.#run.get(tag) ?? tag);
  }

  /**
   * What the README shows in place of the `printed` text, in the run's tags: where the rest of the
   * two agree, each README tag not yet paired is paired with the one printed in its place. Where
   * they do not, only the tags paired before are replaced, so the comparison that follows fails and
   * shows both.
   */
  match(shown: string, printed: string): string {
    const fresh: string[] = [];
    let pattern = "";
    let last = 0;
    for (const found of shown.matchAll(SHOWN_ETAG)) {
      const tag = found[0];
      pattern += escapeRegExp(shown.slice(last, found.index));
      last = found.index + tag.length;
      const paired = this.#run.get(tag);
      if (paired !== undefined) pattern += escapeRegExp(paired);
      else if (fresh.includes(tag)) pattern += `\\k<t${fresh.indexOf(tag)}>`;
      else pattern += `(?<t${fresh.push(tag) - 1}>[A-Za-z0-9_-]{27})`;
    }
    pattern += escapeRegExp(shown.slice(last));
    const match = new RegExp(`^${pattern}$`).exec(printed);
    if (match === null) return this.inRun(shown);
    const taken = new Set(this.#run.values());
    const tags = fresh.map((_, index) => match.groups![`t${index}`]!);
    if (tags.some((tag) => taken.has(tag)) || new Set(tags).size < tags.length) return this.inRun(shown);
    for (const [index, tag] of fresh.entries()) this.#run.set(tag, tags[index]!);
    return this.inRun(shown);
  }
}

/** A fresh store on a temporary SQLite file for one README's examples, and a folder to run them in. */
export function useStore() {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-readme-"));
  const store = {
    dir,
    databaseUrl: `sqlite:${join(dir, "store.db")}`,
    server: undefined as unknown as RealServer<RunningServer>,
  };
  beforeAll(async () => {
    store.server = await startRealServer(plantStoreServer, { database: { url: store.databaseUrl } });
  });
  afterAll(async () => {
    await store.server?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

/** An example pasted into bash in `dir`, pointed at `url`; its stdout. */
export function bash(
  script: string,
  options: { dir: string; url: string; env?: Record<string, string> },
): Promise<string> {
  return runOk("bash", ["-euo", "pipefail", "-c", script.replaceAll(EXAMPLE_URL, options.url)], {
    cwd: options.dir,
    env: cleanEnv(options.env),
  });
}

/** A command on PATH as an installed bin would be: `name` running a script (relative to the repository, or absolute). */
export function installBin(dir: string, name: string, script: string): string {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, name), `#!/bin/sh\nexec "${process.execPath}" "${resolve(ROOT, script)}" "$@"\n`);
  chmodSync(join(bin, name), 0o755);
  return bin;
}

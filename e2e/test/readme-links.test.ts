import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

import { describe, expect, it } from "vitest";

import { publishablePackages, ROOT } from "./workspace.ts";

/**
 * Every relative link in the docs leads somewhere: to a file of this repository and, with a
 * `#anchor` into Markdown, to a heading there. A published package's README ships alone in its
 * tarball, so it may link only to what the tarball holds. (The files linked to must be inputs of
 * this package's turbo test task, see ../turbo.json, or a rename would replay a stale pass.)
 */

/** Folders that hold no docs of ours: installed, built, generated or tool state. */
const SKIPPED = new Set(["node_modules", "dist", "coverage", "test-artifacts", "results"]);

/** Every README.md and CONTRIBUTING.md of the repository, and every Markdown file under docs/. */
function docFiles(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (SKIPPED.has(entry.name) || (entry.name.startsWith(".") && entry.name !== ".changeset")) return [];
      return docFiles(path);
    }
    const inDocs = relative(ROOT, path).split(sep)[0] === "docs";
    return entry.name === "README.md" || entry.name === "CONTRIBUTING.md" || (inDocs && entry.name.endsWith(".md"))
      ? [path]
      : [];
  });
}

/** Markdown without its fenced code blocks (whose `#` lines are comments, not headings). */
const withoutCodeBlocks = (markdown: string) => markdown.replaceAll(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, "");

/** The link targets of a Markdown file: inline links and images, and reference definitions. */
function linkTargets(markdown: string): string[] {
  // Code spans may hold `](` that is not a link; a link's text may hold a code span, which goes too.
  const text = withoutCodeBlocks(markdown).replaceAll(/`[^`\n]*`/g, "");
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const references = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!);
  return [...inline, ...references];
}

/** GitHub's anchor for a heading's text (github-slugger): lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replaceAll(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replaceAll(/[`*]/g, "")
    .replaceAll(/<[^>]+>/g, "");
  return text
    .toLowerCase()
    .replaceAll(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replaceAll(" ", "-");
}

/** The anchors a Markdown file offers: one per heading (repeats numbered as GitHub does), and explicit ids. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of withoutCodeBlocks(markdown).matchAll(/^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(heading!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) result.add(id!);
  return result;
}

type Link = { file: string; target: string };

/** A relative link's problem, or undefined when it resolves. */
function problem({ file, target }: Link): string | undefined {
  const [rawPath, anchor] = target.split("#", 2) as [string, string | undefined];
  const path = rawPath === "" ? file : resolve(dirname(file), decodeURI(rawPath));
  if (path !== ROOT.replace(/\/$/, "") && !path.startsWith(ROOT))
    return "leaves the repository (a fresh clone has nothing there)";
  if (!existsSync(path)) return "names no file";
  if (anchor === undefined || anchor === "" || !path.endsWith(".md") || statSync(path).isDirectory()) return undefined;
  return anchors(readFileSync(path, "utf8")).has(anchor) ? undefined : `has no heading #${anchor}`;
}

const isRelative = (target: string) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("//");

const docs = docFiles();
const links: Link[] = docs.flatMap((file) =>
  linkTargets(readFileSync(file, "utf8"))
    .filter(isRelative)
    .map((target) => ({ file, target })),
);

describe("the docs' links", () => {
  it("finds the docs it is meant to check", () => {
    const found = docs.map((file) => relative(ROOT, file));
    for (const expected of [
      "README.md",
      "CONTRIBUTING.md",
      "docs/architecture.md",
      "docs/api-decisions.md",
      "bench/README.md",
      "packages/server/README.md",
      "packages/schema/README.md",
      "packages/client/README.md",
      "apps/cli/README.md",
    ]) {
      expect(found).toContain(expected);
    }
    expect(links.length).toBeGreaterThan(20);
  });

  it("sees links, headings and anchors the way GitHub does", () => {
    expect(
      linkTargets("[a](x.md) ![b](y.png) [`c`](z.md#top) `[no](code.md)`\n```sh\n[no](block.md)\n```\n[d]: ref.md\n"),
    ).toEqual(["x.md", "y.png", "z.md#top", "ref.md"]);
    expect(slug("Tokens, scopes and rate limits")).toBe("tokens-scopes-and-rate-limits");
    expect(slug("The API reference page: `GET /docs`")).toBe("the-api-reference-page-get-docs");
    expect(slug("Why a thin adapter instead of `createOpenApiKoaMiddleware`")).toBe(
      "why-a-thin-adapter-instead-of-createopenapikoamiddleware",
    );
    expect([...anchors("# A\n## A\n```sh\n# not a heading\n```\n")]).toEqual(["a", "a-1"]);
  });

  it("every relative link resolves to a file of the repository, and every anchor to a heading", () => {
    const broken = links.flatMap((link) => {
      const why = problem(link);
      return why === undefined ? [] : [`${relative(ROOT, link.file)}: (${link.target}) ${why}`];
    });
    expect(broken).toEqual([]);
  });

  it("a published package's README links only to what its tarball ships", () => {
    const stray = publishablePackages().flatMap((pkg) => {
      const readme = join(pkg.dir, "README.md");
      const manifest = JSON.parse(readFileSync(join(pkg.dir, "package.json"), "utf8")) as { files?: string[] };
      const shipped = ["package.json", ...(manifest.files ?? [])];
      return links
        .filter((link) => link.file === readme)
        .flatMap(({ target }) => {
          const [rawPath] = target.split("#", 1) as [string];
          if (rawPath === "") return [];
          const inPackage = relative(pkg.dir, resolve(pkg.dir, decodeURI(rawPath)));
          const ships = shipped.some((entry) => inPackage === entry || inPackage.startsWith(`${entry}/`));
          return ships ? [] : [`${pkg.name}: (${target}) is not in the tarball`];
        });
    });
    expect(stray).toEqual([]);
  });
});

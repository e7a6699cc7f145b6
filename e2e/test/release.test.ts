import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

import { readChangesets } from "@changesets/read";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { cleanEnv, copyRepository, publishablePackages, ROOT, run, runOk, type RunResult } from "./workspace.ts";

/**
 * `pnpm release --dry-run` in a scratch copy of the repository, with one more changeset: the real
 * release script versions (changeset version), moves the API baseline, builds, and shows what
 * `changeset publish` would publish, packing each package with `pnpm publish --dry-run`.
 */

const GIT = ["-c", "user.name=Release Test", "-c", "user.email=release-test@invalid", "-c", "commit.gpgsign=false"];
const PUBLIC = ["@plantstore/cli", "@plantstore/client", "@plantstore/schema", "@plantstore/server"];
const PRIVATE = [
  "@plantstore/bench",
  "@plantstore/e2e",
  "@plantstore/eslint-config",
  "@plantstore/test-support",
  "@plantstore/tsconfig",
];
const BUMPS = ["none", "patch", "minor", "major"] as const;

let copy: string;
let versionBefore: string;
let expected: string;
let headBefore: string;
let release: RunResult;
// `pnpm publish` hands the packed tarball to npm: the pinned one, on every machine.
let env: NodeJS.ProcessEnv;

function bump(version: string, kind: (typeof BUMPS)[number]): string {
  const [major = 0, minor = 0, patch = 0] = version.split(".").map(Number);
  if (kind === "major") return `${major + 1}.0.0`;
  if (kind === "minor") return `${major}.${minor + 1}.0`;
  if (kind === "patch") return `${major}.${minor}.${patch + 1}`;
  return version;
}

const manifest = (dir: string) =>
  JSON.parse(readFileSync(join(copy, dir, "package.json"), "utf8")) as { name: string; version: string };
const packageDirs = () => publishablePackages().map((pkg) => pkg.dir.slice(ROOT.length));

beforeAll(async () => {
  copy = mkdtempSync(join(tmpdir(), "plantstore-release-"));
  env = cleanEnv({
    PATH: `${join(ROOT, "e2e", "node_modules", ".bin")}${delimiter}${cleanEnv()["PATH"]}`,
    // The copy's build replays the repository's (the same files), as a release from a checkout
    // that was built does: the dry run then spends its time on what a release adds.
    TURBO_CACHE_DIR: join(ROOT, ".turbo", "cache"),
  });
  await copyRepository(copy);
  await runOk("git", ["init", "-q", "-b", "main"], { cwd: copy });
  await runOk("git", [...GIT, "add", "-A"], { cwd: copy });
  await runOk("git", [...GIT, "commit", "-q", "-m", "the repository as tested"], { cwd: copy });
  await runOk("pnpm", ["install", "--prefer-offline", "--frozen-lockfile"], { cwd: copy, env, timeoutMs: 240_000 });

  writeFileSync(
    join(copy, ".changeset", "dry-run-feature.md"),
    '---\n"@plantstore/client": minor\n---\n\nA feature made up by the release dry run.\n',
  );
  await runOk("git", [...GIT, "add", "-A"], { cwd: copy });
  await runOk("git", [...GIT, "commit", "-q", "-m", "a changeset"], { cwd: copy });
  headBefore = (await runOk("git", ["rev-parse", "HEAD"], { cwd: copy })).trim();

  // The fixed version line moves by the largest bump any pending changeset asks for.
  const kinds = (await readChangesets(copy)).flatMap((c) => c.releases.map((r) => r.type));
  const largest = BUMPS[Math.max(...kinds.map((k) => BUMPS.indexOf(k)))] ?? "none";
  versionBefore = manifest("packages/schema").version;
  expected = bump(versionBefore, largest);

  release = await run("pnpm", ["release", "--dry-run"], { cwd: copy, env, timeoutMs: 300_000 });
}, 600_000);

afterAll(() => {
  if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
});

describe("pnpm release --dry-run", () => {
  it("succeeds", () => {
    expect(release.code, `${release.stdout}\n${release.stderr}`).toBe(0);
    // The test's own changeset is a minor one, so there is always something to release.
    expect(expected).not.toBe(versionBefore);
  });

  it("passes npm none of pnpm's own settings (no 'Unknown env config' warnings of the workspace's)", () => {
    // npm warns once per unknown setting it finds in the environment, and once per unknown one in
    // the user's own ~/.npmrc (which pnpm exports again): only the latter, the machine's, may remain.
    const output = `${release.stdout}\n${release.stderr}`;
    const warned = (source: string) =>
      new Set([...output.matchAll(new RegExp(`Unknown ${source} config "([^"]+)"`, "g"))].map((m) => m[1]));
    const fromUser = warned("user");
    expect([...warned("env")].filter((setting) => !fromUser.has(setting))).toEqual([]);
  });

  it("bumps the four packages together to the next version", () => {
    expect(packageDirs().map((dir) => manifest(dir).version)).toEqual(packageDirs().map(() => expected));
  });

  it("writes each CHANGELOG.md with the new version on top and the history below", () => {
    for (const dir of packageDirs()) {
      const changelog = readFileSync(join(copy, dir, "CHANGELOG.md"), "utf8");
      expect(changelog.startsWith(`# ${manifest(dir).name}\n\n## ${expected}\n`), dir).toBe(true);
      expect(changelog, dir).toContain("\n## 1.0.0\n");
    }
    expect(readFileSync(join(copy, "packages/client/CHANGELOG.md"), "utf8")).toContain(
      "A feature made up by the release dry run.",
    );
  });

  it("consumes every changeset", () => {
    expect(readdirSync(join(copy, ".changeset")).sort()).toEqual(["README.md", "config.json"]);
  });

  it("makes the served OpenAPI document the compatibility baseline", () => {
    expect(readFileSync(join(copy, "spec/openapi.released.json"), "utf8")).toBe(
      readFileSync(join(copy, "spec/openapi.snapshot.json"), "utf8"),
    );
  });

  it("would publish exactly the four public packages at the new version, and nothing private", () => {
    for (const name of PUBLIC) expect(release.stdout).toContain(`+ ${name}@${expected}`);
    const plan = release.stdout.slice(release.stdout.indexOf("Packages to publish:"));
    for (const name of PUBLIC) expect(plan).toContain(`- ${name}@${expected} (latest)`);
    for (const name of PRIVATE) {
      expect(release.stdout).not.toContain(`+ ${name}@`);
      expect(plan).not.toContain(name);
    }
  });

  it("packs each package depending on the others' new version", async () => {
    const out = join(copy, "packed");
    mkdirSync(out);
    await runOk("pnpm", ["pack", "--pack-destination", out], { cwd: join(copy, "apps/cli"), env });
    await runOk("tar", ["-xzf", join(out, `plantstore-cli-${expected}.tgz`), "-C", out], { cwd: copy });
    const packed = JSON.parse(readFileSync(join(out, "package", "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(packed.dependencies["@plantstore/client"]).toBe(expected);
    expect(packed.dependencies["@plantstore/schema"]).toBe(expected);
  });

  it("commits and tags nothing", async () => {
    expect((await runOk("git", ["rev-parse", "HEAD"], { cwd: copy })).trim()).toBe(headBefore);
    expect((await runOk("git", ["tag"], { cwd: copy })).trim()).toBe("");
    expect(release.stdout).toContain("nothing was committed, published or tagged");
  });
});

describe("pnpm release refuses", () => {
  it("to release from a tree with uncommitted changes", async () => {
    // The dry run above left its versioned files uncommitted.
    const result = await run("pnpm", ["release", "--dry-run"], { cwd: copy, env });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("a release is made from a clean tree");
  });

  it("to release without a changeset", async () => {
    await runOk("git", [...GIT, "add", "-A"], { cwd: copy });
    await runOk("git", [...GIT, "commit", "-q", "-m", "released"], { cwd: copy });
    expect(readdirSync(join(copy, ".changeset")).filter((f) => f.endsWith(".md") && f !== "README.md")).toEqual([]);
    const result = await run("pnpm", ["release"], { cwd: copy, env });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("no changesets to release");
    // Nothing was attempted: no tag, no new commit.
    expect((await runOk("git", ["tag"], { cwd: copy })).trim()).toBe("");
  });
});

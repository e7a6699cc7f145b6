import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  cleanEnv,
  installedVersion,
  NPM_CLI,
  publishablePackages,
  ROOT,
  run,
  runOk,
  type ServerProcess,
  startServerProcess,
  type WorkspacePackage,
} from "./workspace.ts";

/**
 * What users get from the registry: every public package packed with `pnpm pack` (which applies
 * `publishConfig` and the `.pnpmfile.cjs` packing hook, as `pnpm publish` does), checked for
 * workspace leftovers, then installed with plain npm into a scratch project that has never seen
 * the workspace, and used there: the server from its tarball, the client from ESM and from
 * TypeScript (`moduleResolution: nodenext`), and the `plantstore` CLI.
 */

const TOKEN = "e2e-token-0123456789abcdefghijklmnopq";
const EXPECTED = ["@plantstore/cli", "@plantstore/client", "@plantstore/schema", "@plantstore/server"];

type Packed = WorkspacePackage & {
  tarball: string;
  unpacked: string;
  files: string[];
  manifest: Record<string, unknown>;
};

let scratch: string;
let project: string;
const packed: Packed[] = [];
let server: ServerProcess | undefined;

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path, base) : [relative(base, path)];
  });
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "plantstore-packed-"));
  const tarballs = join(scratch, "tarballs");
  mkdirSync(tarballs);
  for (const pkg of publishablePackages()) {
    const before = new Set(readdirSync(tarballs));
    await runOk("pnpm", ["pack", "--pack-destination", tarballs], { cwd: pkg.dir });
    const [file] = readdirSync(tarballs).filter((name) => !before.has(name));
    if (file === undefined) throw new Error(`pnpm pack wrote no tarball for ${pkg.name}`);
    const unpacked = join(scratch, "unpacked", pkg.name);
    mkdirSync(unpacked, { recursive: true });
    await runOk("tar", ["-xzf", join(tarballs, file), "-C", unpacked, "--strip-components=1"], { cwd: scratch });
    const manifest = JSON.parse(readFileSync(join(unpacked, "package.json"), "utf8")) as Record<string, unknown>;
    packed.push({ ...pkg, tarball: join(tarballs, file), unpacked, files: listFiles(unpacked).sort(), manifest });
  }

  // A project that knows nothing of the workspace: the tarballs, TypeScript and Node's types.
  project = join(scratch, "project");
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    `${JSON.stringify(
      {
        name: "plantstore-consumer",
        private: true,
        type: "module",
        dependencies: Object.fromEntries(packed.map((p) => [p.name, `file:${p.tarball}`])),
        devDependencies: { typescript: installedVersion("typescript"), "@types/node": installedVersion("@types/node") },
      },
      null,
      2,
    )}\n`,
  );
  await runOk(process.execPath, [NPM_CLI, "install", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: project,
    timeoutMs: 240_000,
  });

  server = await startServerProcess(join(project, "node_modules/.bin/plantstore-server"), {
    cwd: project,
    env: cleanEnv({
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: `sqlite:${join(scratch, "plants.db")}`,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_LOG_LEVEL: "info",
    }),
  });
}, 300_000);

afterAll(async () => {
  await server?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

describe("pnpm pack of every public package", () => {
  it("packs exactly the four packages of the shared version line", () => {
    expect(packed.map((p) => p.name).sort()).toEqual(EXPECTED);
    expect(new Set(packed.map((p) => p.version)).size).toBe(1);
  });

  it("ships only dist, README.md, LICENSE, CHANGELOG.md and package.json", () => {
    for (const pkg of packed) {
      const stray = pkg.files.filter((f) => !/^(dist\/.+|README\.md|LICENSE|CHANGELOG\.md|package\.json)$/.test(f));
      expect(stray, pkg.name).toEqual([]);
      for (const required of ["README.md", "LICENSE", "CHANGELOG.md", "package.json"])
        expect(pkg.files, pkg.name).toContain(required);
      expect(
        pkg.files.filter((f) => /\.test\.|\.tsbuildinfo$/.test(f)),
        pkg.name,
      ).toEqual([]);
    }
  });

  it("ships no type declarations in the CLI, which nothing imports", () => {
    const cli = packed.find((p) => p.name === "@plantstore/cli")!;
    expect(cli.files.filter((f) => f.endsWith(".d.ts"))).toEqual([]);
  });

  it("says where its source, its README and its issue tracker are", () => {
    for (const pkg of packed) {
      const directory = relative(ROOT, pkg.dir).replace(/\/$/, "");
      expect(pkg.manifest["repository"], pkg.name).toEqual({
        type: "git",
        url: "git+https://github.com/plantstore/plantstore.git",
        directory,
      });
      expect(pkg.manifest["homepage"], pkg.name).toBe(
        `https://github.com/plantstore/plantstore/tree/main/${directory}#readme`,
      );
      expect(pkg.manifest["bugs"], pkg.name).toBe("https://github.com/plantstore/plantstore/issues");
    }
  });

  it("leaves no workspace:, catalog:, devDependencies, scripts or source condition in the manifest", () => {
    for (const pkg of packed) {
      const text = JSON.stringify(pkg.manifest);
      expect(text, pkg.name).not.toMatch(/workspace:|catalog:|@plantstore\/source|\.\/src\//);
      expect(pkg.manifest["devDependencies"], pkg.name).toBeUndefined();
      expect(pkg.manifest["scripts"], pkg.name).toBeUndefined();
      const dependencies = (pkg.manifest["dependencies"] ?? {}) as Record<string, string>;
      for (const [name, range] of Object.entries(dependencies)) {
        // Our own packages move together: each depends on exactly the same version.
        if (name.startsWith("@plantstore/")) expect(range, `${pkg.name} -> ${name}`).toBe(pkg.version);
      }
    }
  });

  it("points exports, types and bin only at files inside the tarball", () => {
    const targets = (value: unknown): string[] =>
      typeof value === "string"
        ? [value]
        : value !== null && typeof value === "object"
          ? Object.values(value).flatMap(targets)
          : [];
    for (const pkg of packed) {
      const paths = [
        ...targets(pkg.manifest["exports"]),
        ...targets(pkg.manifest["types"]),
        ...targets(pkg.manifest["bin"]),
      ];
      expect(paths.length, pkg.name).toBeGreaterThan(0);
      for (const path of paths) expect(existsSync(join(pkg.unpacked, path)), `${pkg.name}: ${path}`).toBe(true);
    }
  });

  it("carries no source maps, and no source-map comment pointing anywhere", () => {
    for (const pkg of packed) {
      expect(
        pkg.files.filter((f) => f.endsWith(".map")),
        pkg.name,
      ).toEqual([]);
      for (const file of pkg.files.filter((f) => /\.(js|d\.ts)$/.test(f))) {
        expect(readFileSync(join(pkg.unpacked, file), "utf8"), `${pkg.name}/${file}`).not.toMatch(/sourceMappingURL=/);
      }
    }
  });

  it("imports only Node built-ins, its own files and its declared dependencies (code and types)", () => {
    const builtins = new Set(builtinModules);
    for (const pkg of packed) {
      const dependencies = new Set(Object.keys(pkg.manifest["dependencies"] ?? {}));
      // Swagger UI's browser bundle is served to browsers, never imported by Node.
      const modules = pkg.files.filter((f) => /\.(js|d\.ts)$/.test(f) && !f.startsWith("dist/docs-assets/"));
      expect(modules.length, pkg.name).toBeGreaterThan(0);
      for (const file of modules) {
        const code = readFileSync(join(pkg.unpacked, file), "utf8");
        const specifiers = [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["']([^"']+)["']/g)].map(
          (m) => m[1] ?? "",
        );
        for (const specifier of specifiers) {
          if (specifier.startsWith(".")) {
            // tsc keeps `./x.ts` in the declarations it emits (rewriteRelativeImportExtensions
            // rewrites only .js), and TypeScript resolves it to the `./x.d.ts` beside it.
            const target = file.endsWith(".d.ts") ? specifier.replace(/\.ts$/, ".d.ts") : specifier;
            expect(
              existsSync(resolve(join(pkg.unpacked, file, ".."), target)),
              `${pkg.name}/${file} imports ${specifier}`,
            ).toBe(true);
            continue;
          }
          if (specifier.startsWith("node:") || builtins.has(specifier)) continue;
          const name = specifier.startsWith("@")
            ? specifier.split("/").slice(0, 2).join("/")
            : (specifier.split("/")[0] ?? "");
          // Declarations may also be satisfied by the DefinitelyTyped package (koa -> @types/koa).
          const typesPackage = `@types/${name.replace(/^@/, "").replace("/", "__")}`;
          const declared = dependencies.has(name) || (file.endsWith(".d.ts") && dependencies.has(typesPackage));
          expect(declared, `${pkg.name}/${file} imports ${specifier}, not a dependency`).toBe(true);
        }
      }
    }
  });
});

/**
 * Runs the project's tsc (skipLibCheck off) and returns the errors in the consumer's files and in
 * our packages' declarations. Errors inside other libraries' declarations are left out: those of
 * trpc-to-openapi 3.3 name modules it does not depend on (fastify, next, h3), and are not ours to fix.
 */
async function typeErrorsOutsideThirdParty(args: string[]): Promise<string[]> {
  const result = await run(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), ...args], {
    cwd: project,
  });
  const errors = result.stdout.split("\n").filter((line) => /^\S.*\(\d+,\d+\): error TS/.test(line));
  if (result.code !== 0 && errors.length === 0)
    throw new Error(`tsc failed without a diagnostic:\n${result.stdout}\n${result.stderr}`);
  return errors.filter((line) => !line.startsWith("node_modules/") || line.startsWith("node_modules/@plantstore/"));
}

describe("the tarballs installed with npm into a project outside the workspace", () => {
  it("installs real copies, not links into the workspace", () => {
    for (const name of EXPECTED) {
      const installed = realpathSync(join(project, "node_modules", name));
      expect(installed.startsWith(realpathSync(project)), name).toBe(true);
    }
  });

  it("runs plantstore-server from its tarball, serving the API and the /docs page", async () => {
    const health = await fetch(`${server!.url}/readyz`);
    expect(health.status).toBe(200);
    for (const path of ["/docs", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/openapi.json"]) {
      expect((await fetch(`${server!.url}${path}`)).status, path).toBe(200);
    }
    // The document's version is read from the package's own package.json, found from dist/.
    const document = (await (await fetch(`${server!.url}/openapi.json`)).json()) as { info: { version: string } };
    const manifest = packed.find((p) => p.name === "@plantstore/server")!.manifest;
    expect(document.info.version).toBe(manifest["version"]);
  });

  it("imports @plantstore/client from an ESM script and creates a plant (an id above 2^53, exact)", async () => {
    writeFileSync(
      join(project, "create.mjs"),
      [
        'import { createPlantStoreClient } from "@plantstore/client";',
        "const store = createPlantStoreClient({ baseUrl: process.env.STORE_URL, token: process.env.STORE_TOKEN });",
        'const plant = await store.createPlant({ id: 9007199254740993n, name: "Fern", tag: "fern" });',
        'process.stdout.write(JSON.stringify({ plant, resolved: import.meta.resolve("@plantstore/client") }));',
        "",
      ].join("\n"),
    );
    const out = await runOk(process.execPath, ["create.mjs"], {
      cwd: project,
      env: cleanEnv({ STORE_URL: server!.url, STORE_TOKEN: TOKEN }),
    });
    const { plant, resolved } = JSON.parse(out) as { plant: unknown; resolved: string };
    expect(plant).toEqual({ name: "Fern", tag: "fern" });
    expect(resolved).toBe(`file://${realpathSync(project)}/node_modules/@plantstore/client/dist/index.js`);

    const listed = await fetch(`${server!.url}/plants`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await listed.text()).toContain('"id":9007199254740993');
  });

  it("type-checks a TypeScript consumer of the client and the server with moduleResolution nodenext, and runs it", async () => {
    writeFileSync(
      join(project, "tsconfig.json"),
      `${JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2023",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ["node"],
        },
        files: ["consumer.ts"],
      })}\n`,
    );
    writeFileSync(
      join(project, "consumer.ts"),
      [
        'import { createPlantStoreClient, PlantStoreError, type NewPlantInput, type Plant } from "@plantstore/client";',
        'import { ErrorCodes } from "@plantstore/schema";',
        "// The server's declarations too (Koa, pino, tRPC types), checked with skipLibCheck off.",
        'import type { Config, RunningServer } from "@plantstore/server";',
        "",
        'const store = createPlantStoreClient({ baseUrl: process.env["STORE_URL"] ?? "", token: process.env["STORE_TOKEN"] ?? "" });',
        'const input: NewPlantInput = { id: 7n, name: "Moss" };',
        "const plant: Plant = await store.createPlant(input);",
        "// @ts-expect-error a NewPlantInput needs a name: the types are real, not `any`",
        "const incomplete: NewPlantInput = { id: 8n };",
        "const conflict: number = ErrorCodes.ID_CONFLICT.error;",
        "export type Embedded = { config: Config; running: RunningServer };",
        "process.stdout.write(JSON.stringify({ plant, conflict, isError: incomplete instanceof PlantStoreError }));",
        "",
      ].join("\n"),
    );
    expect(await typeErrorsOutsideThirdParty(["-p", "tsconfig.json"])).toEqual([]);
    const out = await runOk(process.execPath, ["consumer.ts"], {
      cwd: project,
      env: cleanEnv({ STORE_URL: server!.url, STORE_TOKEN: TOKEN }),
    });
    expect(JSON.parse(out)).toEqual({ plant: { name: "Moss" }, conflict: 40900, isError: false });
    // A whole tsc run over Koa's, pino's and tRPC's declarations with skipLibCheck off: 28–30 s on a
    // loaded 2-core machine, where the shared 30 s limit failed it. What it checks is the types, not the time.
  }, 120_000);

  it("fails the type check when a consumer misuses the client (the check can fail)", async () => {
    writeFileSync(
      join(project, "misuse.ts"),
      'import { createPlantStoreClient } from "@plantstore/client";\ncreatePlantStoreClient({ baseUrl: 1 });\n',
    );
    const errors = await typeErrorsOutsideThirdParty([
      "--noEmit",
      "--strict",
      "--skipLibCheck",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "misuse.ts",
    ]);
    expect(errors).toEqual([expect.stringMatching(/^misuse\.ts\(2,\d+\): error TS2322/)]);
  });

  it("runs the plantstore CLI from its tarball", async () => {
    const env = cleanEnv({ PLANTSTORE_URL: server!.url, PLANTSTORE_TOKEN: TOKEN });
    const bin = join(project, "node_modules/.bin/plantstore");
    expect(await runOk(bin, ["plants", "create", "--id", "9", "--name", "Ivy", "--json"], { cwd: project, env })).toBe(
      '{"name":"Ivy"}\n',
    );
    const version = packed.find((p) => p.name === "@plantstore/cli")?.version ?? "?";
    expect((await runOk(bin, ["--version"], { cwd: project, env })).trim()).toBe(version);
  });
});

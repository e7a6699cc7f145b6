import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A static server for the browser test: one page whose import map points `@plantstore/client`
 * at the client's BUILT ESM (`dist/`), and every runtime dependency, found the way Node finds it
 * (from the package that depends on it), at that package's own files. No bundler: the browser
 * resolves the bare names through the import map and the relative imports by itself.
 */

/** The export conditions a browser bundler resolves with; `@plantstore/source` is workspace-only. */
const BROWSER_CONDITIONS = ["browser", "import", "default"];

type PackageJson = {
  name: string;
  type?: string;
  main?: string;
  exports?: string | Record<string, unknown>;
  dependencies?: Record<string, string>;
};

/** One package served under `/modules/<name>/`, or, for CommonJS, through a wrapper. */
type ServedPackage = { name: string; root: string; manifest: PackageJson; entries: Map<string, string> };

export type ModuleServer = {
  /** `http://127.0.0.1:<port>`: the page's origin, which the API server must allow by CORS. */
  origin: string;
  /** The page's URL. */
  pageUrl: string;
  /** Paths of the files served so far, e.g. `/modules/@plantstore/client/dist/index.js`. */
  served: string[];
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

const CLIENT_ROOT = realpathSync(fileURLToPath(new URL("..", import.meta.url)));

function readManifest(root: string): PackageJson {
  return JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as PackageJson;
}

/** The file an `exports` target picks under the browser's conditions, first matching key first. */
function pickTarget(target: unknown): string | undefined {
  if (typeof target === "string") return target;
  if (target === null || typeof target !== "object") return undefined;
  for (const [condition, value] of Object.entries(target)) {
    if (BROWSER_CONDITIONS.includes(condition)) {
      const picked = pickTarget(value);
      if (picked !== undefined) return picked;
    }
  }
  return undefined;
}

/** Import-map specifiers of one ESM package (`zod`, `zod/mini`, …) and the files they load. */
function esmEntries(manifest: PackageJson): Map<string, string> {
  const entries = new Map<string, string>();
  const declared = manifest.exports ?? manifest.main ?? "./index.js";
  // `exports` may be one target or conditions for "." alone, instead of a map of subpaths.
  const exports =
    typeof declared === "object" && Object.keys(declared).every((key) => key.startsWith("."))
      ? declared
      : { ".": declared };
  for (const [subpath, target] of Object.entries(exports)) {
    // Wildcard subpaths (zod's locales) and package.json are not module entry points to map.
    if (subpath.includes("*") || subpath === "./package.json") continue;
    const file = pickTarget(target);
    if (file?.endsWith(".js")) entries.set(manifest.name + subpath.slice(1), file);
  }
  return entries;
}

/** The folder of a dependency's package.json, as Node resolves it from the dependent package. */
function packageRoot(require: NodeJS.Require, name: string): string {
  try {
    return dirname(realpathSync(require.resolve(`${name}/package.json`)));
  } catch {
    // Its `exports` hide package.json: walk up from its main entry instead.
    let dir = dirname(realpathSync(require.resolve(name)));
    while (!existsSync(join(dir, "package.json")) || readManifest(dir).name !== name) dir = dirname(dir);
    return dir;
  }
}

/** The client and everything it loads at runtime, each resolved from the package that depends on it. */
function runtimePackages(): ServedPackage[] {
  const found = new Map<string, ServedPackage>();
  const visit = (root: string) => {
    const manifest = readManifest(root);
    if (found.has(manifest.name)) return;
    found.set(manifest.name, { name: manifest.name, root, manifest, entries: esmEntries(manifest) });
    const require = createRequire(join(root, "package.json"));
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(packageRoot(require, dependency));
  };
  visit(CLIENT_ROOT);
  return [...found.values()];
}

/**
 * A CommonJS file as an ES module whose default export is `module.exports`: what Node's ESM
 * loader and every bundler do for `import X from "cjs-package"`. Browsers have no such interop,
 * so a CommonJS dependency of the client cannot be loaded there without this step (or a bundler).
 */
function commonJsAsModule(pkg: ServedPackage): string {
  const file = join(pkg.root, pkg.manifest.main ?? "index.js");
  const source = readFileSync(file, "utf8");
  if (/\brequire\s*\(/.test(source)) {
    throw new Error(`${pkg.name} (CommonJS) requires other modules: the browser test cannot wrap it without a bundler`);
  }
  return `const module = { exports: {} };\nconst exports = module.exports;\n${source}\nexport default module.exports;\n`;
}

function page(importMap: Record<string, string>): string {
  return `<!doctype html>
<html lang="en">
<meta charset="utf-8">
<title>@plantstore/client in a browser</title>
<script type="importmap">${JSON.stringify({ imports: importMap })}</script>
<script type="module">
  // Either the client's exports or why they did not load, for the test to wait on.
  import("@plantstore/client").then(
    (client) => { window.plantStoreClient = client; },
    (error) => { window.plantStoreClientError = String(error); },
  );
</script>
</html>
`;
}

export async function startModuleServer(): Promise<ModuleServer> {
  const packages = runtimePackages();
  const importMap: Record<string, string> = {};
  const wrapped = new Map<string, string>();
  for (const pkg of packages) {
    if (pkg.manifest.type === "module") {
      for (const [specifier, file] of pkg.entries) {
        // The client's and the schema's entries are their dist/: built by turbo before `test`.
        if (!existsSync(join(pkg.root, file))) {
          throw new Error(
            `${join(pkg.root, file)} is missing: build it first (\`pnpm turbo run build --filter @plantstore/client...\`)`,
          );
        }
        importMap[specifier] = `/modules/${pkg.name}/${file.replace(/^\.\//, "")}`;
      }
    } else {
      const path = `/commonjs/${pkg.name}.js`;
      wrapped.set(path, commonJsAsModule(pkg));
      importMap[pkg.name] = path;
    }
  }
  const html = page(importMap);
  const served: string[] = [];

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://localhost").pathname;
    const send = (status: number, type: string, body: string | Buffer) => {
      response.writeHead(status, { "content-type": type, "cache-control": "no-store" });
      response.end(body);
    };
    if (request.method !== "GET") return send(405, "text/plain", "GET only");
    if (path === "/") return send(200, "text/html; charset=utf-8", html);
    const module = wrapped.get(path);
    if (module !== undefined) {
      served.push(path);
      return send(200, "text/javascript; charset=utf-8", module);
    }
    // /modules/<package name>/<file>: only .js files inside an ESM package's own folder.
    const pkg = packages.find((p) => p.manifest.type === "module" && path.startsWith(`/modules/${p.name}/`));
    if (pkg !== undefined && path.endsWith(".js")) {
      const file = join(pkg.root, decodeURIComponent(path.slice(`/modules/${pkg.name}/`.length)));
      if (!relative(pkg.root, file).startsWith(`..${sep}`) && existsSync(file)) {
        served.push(path);
        return send(200, "text/javascript; charset=utf-8", readFileSync(file));
      }
    }
    send(404, "text/plain", `not served: ${path}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve, reject) => {
      server.closeAllConnections();
      server.close((error) => (error ? reject(error) : resolve()));
    });
  return { origin, pageUrl: `${origin}/`, served, close, [Symbol.asyncDispose]: close };
}

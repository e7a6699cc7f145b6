import { existsSync, readdirSync, readFileSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";

import type { PlainPath } from "./plain-paths.ts";
import { answerStaticAsset, type StaticAsset, staticAsset } from "./static-asset.ts";

/**
 * The built web console (apps/web, `pnpm --filter @plantstore/web build`) at `/app`, when
 * PLANTSTORE_WEB_DIR names its folder: the app then calls the API on its own origin, so
 * production needs no CORS setting. The folder is listed once at start (its file names are the
 * only paths answered, so nothing outside it can be asked for) and each file is read on first use.
 * The files need no token: the app asks the person for one and keeps it in sessionStorage.
 */
const WEB_APP_PREFIX = "/app";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
};

// The app's own files and calls only: no inline script or style, nothing from elsewhere.
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function readAsset(file: string): StaticAsset {
  return staticAsset(TYPES[extname(file)] ?? "application/octet-stream", readFileSync(file));
}

/** `/app`, `/app/` (the page) and `/app/<file>` for every file of `dir`; throws at start when `dir` holds no built app. */
export function webAppPaths(dir: string): PlainPath[] {
  const index = join(dir, "index.html");
  if (!existsSync(index)) {
    throw new Error(
      `PLANTSTORE_WEB_DIR ${dir} has no index.html: build it with \`pnpm --filter @plantstore/web build\``,
    );
  }
  const files = new Map<string, string>([
    [WEB_APP_PREFIX, index],
    [`${WEB_APP_PREFIX}/`, index],
  ]);
  for (const file of listFiles(dir)) files.set(`${WEB_APP_PREFIX}/${relative(dir, file).split(sep).join("/")}`, file);
  const assets = new Map<string, StaticAsset>();
  return [...files].map(([path, file]): PlainPath => ({
    path,
    methods: ["GET", "HEAD"],
    handler: (ctx) => {
      let found = assets.get(path);
      if (found === undefined) {
        found = readAsset(file);
        assets.set(path, found);
      }
      ctx.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
      ctx.set("X-Content-Type-Options", "nosniff");
      ctx.set("Referrer-Policy", "no-referrer");
      // Vite names every asset by its content's hash; the page itself is revalidated each time.
      ctx.set(
        "Cache-Control",
        path.startsWith(`${WEB_APP_PREFIX}/assets/`) ? "public, max-age=31536000, immutable" : "no-cache",
      );
      answerStaticAsset(ctx, found);
    },
  }));
}

import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import type Koa from "koa";

import { answerStaticAsset, type StaticAsset, staticAsset } from "./static-asset.ts";

/**
 * `GET /docs`: Swagger UI over the served `/openapi.json`, every byte from this server. Swagger UI
 * because it runs fully offline (no fonts or scripts from elsewhere once its validator badge is
 * off) and lets a person authorize with a bearer token and send requests from the page.
 *
 * The page forbids every other origin through its Content-Security-Policy, so a future Swagger UI
 * that tried to load something from a CDN would be blocked (and the browser test would see it).
 */

/** The paths this module answers, all `GET`/`HEAD`, none needing a token. */
export const DOCS_PATHS = ["/docs", "/docs/swagger-ui.css", "/docs/swagger-ui-bundle.js", "/docs/init.js"] as const;

const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // Swagger UI's stylesheet draws its icons as data: SVGs.
  "img-src 'self' data:",
  "font-src 'self'",
  // "Try it out" calls the API on this origin only.
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

// Relative URLs, so the page also works behind a proxy that mounts the service under a prefix.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Plant Store API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

// No inline script (the CSP forbids it): the configuration is a file of its own.
const INIT = `"use strict";
window.ui = SwaggerUIBundle({
  url: new URL("openapi.json", document.baseURI).href,
  dom_id: "#swagger-ui",
  deepLinking: true,
  // The default validator badge is an image from validator.swagger.io: no outside requests.
  validatorUrl: null,
  tryItOutEnabled: true,
  displayRequestDuration: true,
  persistAuthorization: false,
  defaultModelsExpandDepth: 1,
});
`;

/** Where Swagger UI's files are: copied next to the build (`dist/docs-assets`), or the installed package. */
function swaggerUiDirectory(): string {
  const bundled = fileURLToPath(new URL("../docs-assets/", import.meta.url));
  if (existsSync(join(bundled, "swagger-ui-bundle.js"))) return bundled;
  // Running from sources in the workspace: swagger-ui-dist is a devDependency of this package.
  return dirname(fileURLToPath(import.meta.resolve("swagger-ui-dist/package.json")));
}

function loadAssets(): Map<string, StaticAsset> {
  const dir = swaggerUiDirectory();
  return new Map<string, StaticAsset>([
    ["/docs", staticAsset("text/html; charset=utf-8", Buffer.from(PAGE))],
    ["/docs/init.js", staticAsset("text/javascript; charset=utf-8", Buffer.from(INIT))],
    ["/docs/swagger-ui.css", staticAsset("text/css; charset=utf-8", readFileSync(join(dir, "swagger-ui.css")))],
    [
      "/docs/swagger-ui-bundle.js",
      staticAsset("text/javascript; charset=utf-8", readFileSync(join(dir, "swagger-ui-bundle.js"))),
    ],
  ]);
}

/**
 * Serves the docs page and its assets from memory (read and gzipped on first use, so a server that
 * never shows its docs pays nothing), revalidated by ETag.
 */
export function createDocsPage(): { serve(ctx: Koa.Context): void } {
  let assets: Map<string, StaticAsset> | undefined;
  return {
    serve(ctx) {
      assets ??= loadAssets();
      const found = assets.get(ctx.path);
      if (found === undefined) throw new Error(`no docs asset for ${ctx.path}`);
      ctx.set("Content-Security-Policy", DOCS_CONTENT_SECURITY_POLICY);
      ctx.set("X-Content-Type-Options", "nosniff");
      ctx.set("Referrer-Policy", "no-referrer");
      ctx.set("Cache-Control", "no-cache");
      answerStaticAsset(ctx, found);
    },
  };
}

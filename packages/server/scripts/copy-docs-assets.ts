import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Part of `build`: copies Swagger UI's bundle, stylesheet and licence into `dist/docs-assets/`,
 * where `GET /docs` finds them in the published package. swagger-ui-dist stays a devDependency on
 * purpose: it depends on @scarf/scarf, whose install script reports installs to a third party,
 * and users of @plantstore/server should not run that.
 */
const source = dirname(fileURLToPath(import.meta.resolve("swagger-ui-dist/package.json")));
const target = fileURLToPath(new URL("../dist/docs-assets/", import.meta.url));
mkdirSync(target, { recursive: true });
for (const file of ["swagger-ui-bundle.js", "swagger-ui.css", "LICENSE", "NOTICE"]) {
  copyFileSync(join(source, file), join(target, file === "LICENSE" || file === "NOTICE" ? `swagger-ui-${file}` : file));
}

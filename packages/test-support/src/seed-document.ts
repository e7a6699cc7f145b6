import { readFileSync } from "node:fs";

import type { OpenApiDoc } from "./response-contract.ts";

/**
 * The interface the store implements, as shipped beside the repository (`../shared/seed`), and
 * our committed copy of it, which a server test keeps identical to the shared one when that is
 * there. Tests check answers against the committed copy: it is a file of this package, so turbo
 * reruns every test that depends on the package when it changes.
 */
export const sharedSeedUrl = new URL("../../../../shared/seed/openapi.json", import.meta.url);
export const vendoredSeedUrl = new URL("../seed-openapi.json", import.meta.url);

export const seedDocument = JSON.parse(readFileSync(vendoredSeedUrl, "utf8")) as OpenApiDoc;

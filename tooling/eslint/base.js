// Shared lint rules; each package's eslint.config.js spreads these.
import eslintComments from "@eslint-community/eslint-plugin-eslint-comments";
import js from "@eslint/js";
import simpleImportSort from "eslint-plugin-simple-import-sort";
import tseslint from "typescript-eslint";

/** Where tests live in every package: a test waits for events, never for the wall clock. */
const TEST_FILES = ["test/**/*.ts", "src/**/*.test.ts"];

export const base = tseslint.config(
  { ignores: ["dist/**", "node_modules/**", ".turbo/**", "coverage/**"] },
  js.configs.recommended,
  // Type-aware: most of the server is async (storage, Redis, webhooks, sockets), where a promise
  // nobody awaits, or one handed to a callback whose result is ignored, loses its error silently.
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // Each file is checked with its own package's tsconfig.json (typescript-eslint's project
      // service), so lint sees the types `tsc` sees.
      parserOptions: { projectService: true },
    },
    plugins: { "simple-import-sort": simpleImportSort, "eslint-comments": eslintComments },
    rules: {
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      // Off on purpose: synchronous implementations of async interfaces (the SQLite store behind
      // PlantStore, test doubles of fetch) are written `async` so that what they throw reaches the
      // caller as a rejection, the way the PostgreSQL implementation's errors do.
      "@typescript-eslint/require-await": "off",
      "simple-import-sort/imports": "error",
      "simple-import-sort/exports": "error",
      // A rule switched off in place must say why (`// eslint-disable-next-line rule -- why`).
      "eslint-comments/require-description": ["error", { ignore: [] }],
      "eslint-comments/no-unused-disable": "error",
      "no-console": "off",
    },
  },
  {
    files: TEST_FILES,
    rules: {
      // Off in tests only: vitest's asymmetric matchers (expect.stringMatching, expect.any) are
      // typed `any`, and every toMatchObject pattern would need a cast that says nothing.
      "@typescript-eslint/no-unsafe-assignment": "off",
      // No clock-sleeping in tests: wait for the event, poll with eventually()
      // (@plantstore/test-support/eventually), or inject a clock and advance it. A timer that
      // must stay (a guard that ends a hung socket, a pace a load generator keeps) is allowed in
      // place with a disable comment saying why.
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.name='setTimeout']",
          message: "Tests do not sleep: wait for the event, use eventually(), or advance an injected clock.",
        },
        {
          selector: "CallExpression[callee.object.name='globalThis'][callee.property.name='setTimeout']",
          message: "Tests do not sleep: wait for the event, use eventually(), or advance an injected clock.",
        },
      ],
      "no-restricted-imports": [
        "error",
        {
          paths: [
            {
              name: "node:timers/promises",
              message: "Tests do not sleep: wait for the event, use eventually(), or advance an injected clock.",
            },
          ],
        },
      ],
    },
  },
  {
    // The config files themselves are plain JavaScript outside every tsconfig.
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
);

/** Turns the type-aware rules off for files no tsconfig can see (spread into a `files` block). */
export const withoutTypes = tseslint.configs.disableTypeChecked;

/**
 * Settings are read, validated and documented in one module, src/config.ts (create-t3-turbo's
 * restrictEnvAccess): nothing else in src/ reads process.env. Tests build their own settings.
 * `hint` says where a new variable goes in that package.
 */
export function onlyConfigReadsEnv(hint) {
  return {
    files: ["src/**/*.ts"],
    ignores: ["src/config.ts", "src/**/*.test.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        { object: "process", property: "env", message: `Only src/config.ts reads process.env: ${hint}` },
      ],
    },
  };
}

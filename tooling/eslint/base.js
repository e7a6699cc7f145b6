// Shared lint rules; each package's eslint.config.js spreads these.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export const base = tseslint.config(
  { ignores: ["dist/**", "node_modules/**", ".turbo/**", "coverage/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": "off",
    },
  },
);

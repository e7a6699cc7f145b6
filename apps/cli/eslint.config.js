import { base } from "@plantstore/eslint-config";

export default [
  ...base,
  {
    // Settings come from one module (create-t3-turbo's restrictEnvAccess); tests build their own.
    files: ["src/**/*.ts"],
    ignores: ["src/config.ts", "src/**/*.test.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        {
          object: "process",
          property: "env",
          message: "Only src/config.ts reads process.env: add the variable to readCliEnv there.",
        },
      ],
    },
  },
];

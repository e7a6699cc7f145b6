import { base, onlyConfigReadsEnv } from "@plantstore/eslint-config";

export default [
  ...base,
  {
    // The HTTP adapter is a leaf: procedures, auth, storage and config must not depend on the
    // transport (tRPC's core never imports its adapters). Only the composition root wires it in.
    files: ["src/**/*.ts"],
    ignores: ["src/http/**", "src/server.ts", "src/index.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/http/**", "./http/**"],
              message:
                "src/http/ is the transport and a leaf: only src/server.ts and src/index.ts import it. " +
                "Shared errors live in src/errors.ts; move what you need to a neutral module.",
            },
          ],
        },
      ],
    },
  },
  onlyConfigReadsEnv("add the setting to SETTINGS there and take it from Config."),
];

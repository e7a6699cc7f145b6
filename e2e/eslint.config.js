import { base, withoutTypes } from "@plantstore/eslint-config";

export default [
  ...base,
  {
    // These import clients that e2e/test/generated-clients.test.ts generates beside them at run
    // time, then type-checks strictly with tsc; before that run there are no types to lint with.
    files: ["interop/**/*.ts"],
    ...withoutTypes,
  },
];

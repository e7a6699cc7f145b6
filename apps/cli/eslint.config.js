import { base, onlyConfigReadsEnv } from "@plantstore/eslint-config";

export default [...base, onlyConfigReadsEnv("add the variable to readCliEnv there.")];

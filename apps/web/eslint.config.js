import { base } from "@plantstore/eslint-config";

export default [...base];

// The layout every package shares; `pnpm format` applies it, `pnpm lint` checks it.
// 120 columns: the width the code was written to before the formatter came, so the one-time
// reformat moved little, and the long error-catalogue and description strings stay on one line.
/** @type {import("prettier").Config} */
export default {
  printWidth: 120,
  // The rest are prettier's defaults, written out so a prettier upgrade cannot change them.
  semi: true,
  singleQuote: false,
  trailingComma: "all",
  arrowParens: "always",
  endOfLine: "lf",
};

import { InvalidArgumentError } from "commander";

const ENTITY_TAG = /^(?:W\/)?"[\x21\x23-\x7e]*"$/;
const OPAQUE_TAG = /^[\x21\x23-\x7e]+$/;

/**
 * `--if-match`: an ETag as `plants get` prints it, quotes included (`'"Xy…"'`), or without its
 * quotes, which a shell drops so easily that they are put back; `*` (any revision) as it is.
 */
export function parseETag(text: string): string {
  if (text === "*" || ENTITY_TAG.test(text)) return text;
  if (OPAQUE_TAG.test(text)) return `"${text}"`;
  throw new InvalidArgumentError('Must be an ETag as `plants get` prints it, e.g. "Xy…" (quotes optional).');
}

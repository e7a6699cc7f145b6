import { INT64_MAX, INT64_MIN } from "./int64.ts";

/**
 * The `after` cursor of `GET /plants` as the server writes it into its `Link: <…>; rel="next"`
 * header: `v1.` and the base64url of the last listed id as 8 big-endian bytes. It is opaque to
 * callers on purpose: they pass it back as text, so a caller whose JSON parser rounds ids above
 * 2^53 still pages exactly, and the form can change with a new prefix. The server also accepts a
 * plain decimal id there, the form `after` had first.
 */
const PREFIX = "v1.";
const BASE64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/** Characters whose 6 bits end in two zeros: 11 characters carry 66 bits, and the id fills 64. */
const LAST_CHARACTERS = [...BASE64URL_ALPHABET].filter((_, value) => value % 4 === 0).join("");

/**
 * Exactly the texts `encodePageCursor` writes (each stands for one id): the served document gives
 * `after` this pattern, so a client or contract tool knows a cursor without having to ask.
 */
export const PAGE_CURSOR_PATTERN = `^${PREFIX.replace(".", "\\.")}[A-Za-z0-9_-]{10}[${LAST_CHARACTERS}]$`;
const PAGE_CURSOR = new RegExp(PAGE_CURSOR_PATTERN);

/** The cursor of the page that follows the plant with this id. */
export function encodePageCursor(id: bigint): string {
  if (id < INT64_MIN || id > INT64_MAX) throw new RangeError(`${id} is not an int64`);
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigInt64(0, id);
  // btoa and atob exist in Node and in browsers alike; the client runs in both.
  const base64 = btoa(String.fromCharCode(...bytes));
  return PREFIX + base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The id a cursor of `encodePageCursor` stands for, or undefined when the text is not one. */
export function decodePageCursor(text: string): bigint | undefined {
  if (!PAGE_CURSOR.test(text)) return undefined;
  const binary = atob(text.slice(PREFIX.length).replaceAll("-", "+").replaceAll("_", "/") + "=");
  const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
  const id = new DataView(bytes.buffer).getBigInt64(0);
  // The pattern already admits only the spelling with the last two bits zero; kept as the proof.
  return encodePageCursor(id) === text ? id : undefined;
}

import { createHash, randomBytes } from "node:crypto";

/**
 * Issued API tokens look like `ps_<id>_<secret>`:
 * - `ps_` makes them recognisable, so secret scanners can find leaked ones
 *   (pattern: `ps_[0-9a-f]{16}_[0-9A-Za-z]{43}`);
 * - `<id>`, 16 hex digits, is public: it names the token in `tokens list` and in `whoami`, and is
 *   how the server finds its record without scanning;
 * - `<secret>` is 32 random bytes (256 bits) in base62, so the whole token is one "word" that a
 *   double-click selects.
 */
export const OPAQUE_TOKEN_PATTERN = /^ps_([0-9a-f]{16})_([0-9A-Za-z]{43})$/;

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SECRET_LENGTH = 43; // ceil(256 / log2(62))

function base62(bytes: Buffer): string {
  let n = BigInt(`0x${bytes.toString("hex")}`);
  let text = "";
  while (n > 0n) {
    text = BASE62[Number(n % 62n)] + text;
    n /= 62n;
  }
  return text.padStart(SECRET_LENGTH, "0");
}

/**
 * Only this digest is stored. A fast hash is the right one here: slow password hashes (bcrypt,
 * argon2) exist to make guessing *low-entropy* secrets expensive, but guessing a 256-bit random
 * secret is hopeless at any hash speed, and a fast hash keeps verification cheap enough for every
 * request. A stolen database therefore yields no usable token.
 */
export function hashOpaqueToken(token: string): Buffer {
  // The same digest the other authenticators use, so one hash per request serves them all.
  return createHash("sha256").update(token, "utf8").digest();
}

export type NewOpaqueToken = { id: string; token: string; secretHash: Buffer };

export function newOpaqueToken(): NewOpaqueToken {
  const id = randomBytes(8).toString("hex");
  const token = `ps_${id}_${base62(randomBytes(32))}`;
  return { id, token, secretHash: hashOpaqueToken(token) };
}

/** The id of a token that has the issued shape, else undefined (then it is not one of ours). */
export function opaqueTokenId(token: string): string | undefined {
  return OPAQUE_TOKEN_PATTERN.exec(token)?.[1];
}

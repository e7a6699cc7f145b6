import { hash, randomBytes } from "node:crypto";

import type { NewPlant } from "@plantstore/schema";

import { ifNoneMatchMatches } from "../preconditions.ts";
import type { IfMatch } from "./plant-store.ts";
import { newPlantPayload } from "./webhook-event.ts";

/** The row of `store_secrets` that keys the plants' entity tags. */
export const ETAG_SECRET_NAME = "etag";

/** A new store's ETag secret: 256 random bits, created once per database and kept in it. */
export const newETagSecret = (): Uint8Array => randomBytes(32);

/**
 * The strong entity tags of a store's plants (RFC 9110 §8.8.3): a SHA-256 of the store's secret
 * followed by a plant's exact JSON (the same bytes `GET /plants/{id}` answers), cut to 162 bits.
 * So a tag changes with every change of content and is the same on every instance on one
 * database, with nothing stored per plant; and without the secret, which never leaves the
 * database, a tag cannot be computed from content guessed offline, so it tells whoever sees it
 * nothing about the plant. A plant
 * deleted and created again with the same content gets the same tag, as its representation is the
 * same (RFC 9110 §8.8.1).
 */
export class PlantETags {
  readonly #key: string;

  constructor(secret: Uint8Array) {
    // The secret as 64 hex digits fills SHA-256's first block. A keyed digest rather than an HMAC:
    // one `hash()` call where an HMAC builds an object per tag on every read, and the cut output
    // gives nothing to extend (a length extension needs the whole digest).
    this.#key = Buffer.from(secret).toString("hex");
  }

  of(plant: NewPlant): string {
    const digest = hash(
      "sha256",
      this.#key + newPlantPayload({ id: plant.id, name: plant.name, tag: plant.tag ?? null }),
      "base64url",
    );
    return `"${digest.slice(0, 27)}"`;
  }

  /** Whether `ifMatch` holds for what is stored (strong comparison; no plant fails even `*`). */
  holds(ifMatch: IfMatch, stored: NewPlant | undefined): boolean {
    if (stored === undefined) return false;
    if (ifMatch === "*") return true;
    return ifMatch.includes(this.of(stored));
  }

  /** Whether a write's `ifNoneMatch` holds for what is stored: nothing stored, or (tags) none is its tag (weak comparison). */
  holdsNone(ifNoneMatch: IfMatch | undefined, stored: NewPlant | undefined): boolean {
    return ifNoneMatch === undefined || stored === undefined || !ifNoneMatchMatches(ifNoneMatch, this.of(stored));
  }
}

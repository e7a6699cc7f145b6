import { createHash } from "node:crypto";

import type { NewPlant } from "@plantstore/schema";

import { ifNoneMatchMatches } from "../preconditions.ts";
import type { IfMatch } from "./plant-store.ts";
import { newPlantPayload } from "./webhook-event.ts";

/**
 * The strong entity tag of a stored plant (RFC 9110 §8.8.3): a digest of its exact JSON (the same
 * bytes `GET /plants/{id}` answers), so it changes with every change of content and is the same on
 * every instance and both backends for the same plant, with nothing stored beside it. A plant
 * deleted and created again with the same content gets the same tag, as its representation is the
 * same (RFC 9110 §8.8.1).
 */
export function plantETag(plant: NewPlant): string {
  const digest = createHash("sha256")
    .update(newPlantPayload({ id: plant.id, name: plant.name, tag: plant.tag ?? null }))
    .digest("base64url");
  return `"${digest.slice(0, 27)}"`;
}

/** Whether `ifMatch` holds for what is stored (strong comparison; no plant fails even `*`). */
export function ifMatchHolds(ifMatch: IfMatch, stored: NewPlant | undefined): boolean {
  if (stored === undefined) return false;
  if (ifMatch === "*") return true;
  const current = plantETag(stored);
  return ifMatch.includes(current);
}

/** Whether a write's `ifNoneMatch` holds for what is stored: nothing stored, or (tags) none is its tag (weak comparison). */
export function ifNoneMatchHolds(ifNoneMatch: IfMatch | undefined, stored: NewPlant | undefined): boolean {
  return ifNoneMatch === undefined || stored === undefined || !ifNoneMatchMatches(ifNoneMatch, plantETag(stored));
}

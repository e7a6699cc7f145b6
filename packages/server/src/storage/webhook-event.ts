import { randomUUID } from "node:crypto";

/**
 * The new-plant event, shared by every backend so receivers get byte-identical JSON whichever
 * database stored the plant: exactly the `NewPlant` fields, ids as exact JSON integers.
 */
export function newPlantPayload(plant: { id: bigint; name: string; tag: string | null }): string {
  return `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${plant.tag === null ? "" : `,"tag":${JSON.stringify(plant.tag)}`}}`;
}

/** The Standard Webhooks `webhook-id`: fixed when the event is written, the same on every attempt. */
export function newMessageId(): string {
  return `msg_${randomUUID().replaceAll("-", "")}`;
}

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

/** The event types a subscriber may choose (`webhooks add --events`). */
export const WEBHOOK_EVENT_TYPES = ["plant.created", "plant.updated", "plant.deleted"] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * A Standard Webhooks payload `{type, timestamp, data}`, for subscribers that chose their event
 * types; `data` is JSON already (a plant's exact payload, or `{"id":…}` for plant.deleted), and
 * `timestamp` the change's time in RFC 3339 UTC.
 */
export function eventEnvelope(type: WebhookEventType, at: number, data: string): string {
  return `{"type":"${type}","timestamp":"${new Date(at).toISOString()}","data":${data}}`;
}

/** What plant.deleted carries: the id alone, exact. */
export function deletedPlantData(id: bigint): string {
  return `{"id":${id}}`;
}

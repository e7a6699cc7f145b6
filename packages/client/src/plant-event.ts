import { EventPositionText, FeedResetData, NewPlant, parseJsonLossless, PlantDeletedData } from "@plantstore/schema";
import type { z } from "zod";

import { PlantStoreProtocolError } from "./errors.ts";
import type { ServerSentEvent } from "./event-stream-parser.ts";

/**
 * One event of `GET /plants/events`. `position` is the change's place in the store-wide sequence
 * (the SSE `id:`): pass the last one seen as `after` to resume exactly after it.
 */
export type PlantEvent =
  /** A plant was created, or changed: `plant` is the plant after the change, its id exact. */
  | { type: "plant.created" | "plant.updated"; position: bigint; plant: NewPlant }
  /** The plant with this id was deleted. */
  | { type: "plant.deleted"; position: bigint; id: bigint }
  /**
   * The position to resume from was older than the server keeps (or unknown to it): changes may
   * have been missed. Re-list the plants; the feed goes on after `position`, the server's head.
   */
  | { type: "reset"; position: bigint; message: string };

/** A position as the SSE `id:` carries it (a non-negative decimal int64), or undefined for anything else. */
export function parsePosition(text: string): bigint | undefined {
  const parsed = EventPositionText.safeParse(text);
  return parsed.success ? parsed.data : undefined;
}

function readData<T>(event: ServerSentEvent, schema: z.ZodType<T>): T {
  let json: unknown;
  try {
    json = parseJsonLossless(event.data);
  } catch (error) {
    throw new PlantStoreProtocolError(`a ${event.type} event's data is not JSON`, { status: 200, cause: error });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new PlantStoreProtocolError(`a ${event.type} event's data is not what the interface says`, {
      status: 200,
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/**
 * The typed event for one SSE event, or undefined for a type this client does not know (a newer
 * server may send more): it is skipped, though its id still moves the resume position on. An
 * event of a known type that does not match the interface is a PlantStoreProtocolError: a retry
 * would only replay it.
 */
export function toPlantEvent(event: ServerSentEvent): PlantEvent | undefined {
  const { type } = event;
  if (type !== "plant.created" && type !== "plant.updated" && type !== "plant.deleted" && type !== "reset")
    return undefined;
  const position = parsePosition(event.lastEventId);
  if (position === undefined) {
    throw new PlantStoreProtocolError(`a ${type} event without a position (id: ${JSON.stringify(event.lastEventId)})`, {
      status: 200,
    });
  }
  switch (type) {
    case "plant.created":
    case "plant.updated":
      return { type, position, plant: readData(event, NewPlant) };
    case "plant.deleted":
      return { type, position, id: readData(event, PlantDeletedData).id };
    case "reset":
      return { type, position, message: readData(event, FeedResetData).message };
  }
}

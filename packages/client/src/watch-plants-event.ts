import { EventPositionText, type NewPlant, parseJsonLossless, PlantEvent } from "@plantstore/schema";

import { PlantStoreProtocolError } from "./errors.ts";
import type { ServerSentEvent } from "./event-stream-parser.ts";

/**
 * One change as `watchPlants` hands it out: a `PlantEvent` of `@plantstore/schema` (the SSE
 * event as the interface describes it), read into values. `position` is the event's `id:`, the
 * change's place in the store-wide sequence: pass the last one seen as `after` to resume after it.
 */
export type WatchPlantsEvent =
  /** A plant was created, or changed: `plant` is the plant after the change, its id exact. */
  | { type: "plant.created" | "plant.updated"; position: bigint; plant: NewPlant }
  /** The plant with this id was deleted. */
  | { type: "plant.deleted"; position: bigint; id: bigint }
  /**
   * The position to resume from was older than the server keeps (or unknown to it): changes may
   * have been missed. Re-list the plants; the feed goes on after `position`, the server's head.
   */
  | { type: "reset"; position: bigint; message: string };

const KINDS: ReadonlySet<string> = new Set(["plant.created", "plant.updated", "plant.deleted", "reset"]);

/** A position as the SSE `id:` carries it (a non-negative decimal int64), or undefined for anything else. */
export function parsePosition(text: string): bigint | undefined {
  const parsed = EventPositionText.safeParse(text);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The event for one SSE event, or undefined for a type this client does not know (a newer server
 * may send more): it is skipped, though its id still moves the resume position on. An event of a
 * known type that does not match the interface is a PlantStoreProtocolError: a retry would only
 * replay it.
 */
export function toWatchPlantsEvent(event: ServerSentEvent): WatchPlantsEvent | undefined {
  const { type } = event;
  if (!KINDS.has(type)) return undefined;
  const position = parsePosition(event.lastEventId);
  if (position === undefined) {
    throw new PlantStoreProtocolError(`a ${type} event without a position (id: ${JSON.stringify(event.lastEventId)})`, {
      status: 200,
    });
  }
  let data: unknown;
  try {
    data = parseJsonLossless(event.data);
  } catch (error) {
    throw new PlantStoreProtocolError(`a ${type} event's data is not JSON`, { status: 200, cause: error });
  }
  const parsed = PlantEvent.safeParse({ id: event.lastEventId, event: type, data });
  if (!parsed.success) {
    throw new PlantStoreProtocolError(`a ${type} event is not what the interface says`, {
      status: 200,
      cause: parsed.error,
    });
  }
  const wire = parsed.data;
  switch (wire.event) {
    case "plant.created":
    case "plant.updated":
      return { type: wire.event, position, plant: wire.data };
    case "plant.deleted":
      return { type: wire.event, position, id: wire.data.id };
    case "reset":
      return { type: wire.event, position, message: wire.data.message };
  }
}

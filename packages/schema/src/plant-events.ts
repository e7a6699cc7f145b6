import { z } from "zod";

import { INT64_MAX } from "./int64.ts";
import { NEW_PLANT_EXAMPLE, NewPlant, PlantId } from "./plant.ts";

/**
 * A position in the change feed (`GET /plants/events`) as text: the `id:` of an event, sent back
 * as `Last-Event-ID` or `?after=`. A plain non-negative decimal int64.
 */
export const EventPositionText = z
  .string({ error: (issue) => (Array.isArray(issue.input) ? "must be a single value" : "must be a string") })
  .regex(/^(?:0|[1-9]\d*)$/, { error: "must be an event id: a non-negative decimal integer (int64)" })
  .transform((text) => BigInt(text))
  .pipe(z.bigint().max(INT64_MAX, { error: "must be at most 9223372036854775807 (int64)" }));

/** The event kinds of the feed, as its `event:` field names them. */
export const PLANT_EVENT_KINDS = ["plant.created", "plant.updated", "plant.deleted", "reset"] as const;

/** `data` of `plant.deleted`: the id of the plant removed. */
export const PlantDeletedData = z.object({ id: PlantId }).meta({
  id: "PlantDeletedData",
  description: "`data` of `plant.deleted`: the id of the plant removed, an exact JSON integer (int64).",
  examples: [{ id: NEW_PLANT_EXAMPLE.id }],
});

/** `data` of `reset`: the feed cannot resume where asked; re-list, then continue after `head`. */
export const FeedResetData = z
  .object({
    head: z
      .string()
      .regex(/^(?:0|[1-9]\d*)$/)
      .meta({
        description: "The position the stream continues after (also the event's `id:`), as decimal text.",
        examples: ["1042"],
      }),
    message: z.string().min(1),
  })
  .meta({
    id: "FeedResetData",
    description:
      "`data` of `reset`: the resume position is older than the change log's retention (or unknown). Re-list the plants, then keep this event's id as the resume point: what follows is every change after it.",
    examples: [
      {
        head: "1042",
        message:
          "the resume position is not in the change log (older than its retention, or unknown): re-list the plants, then continue from here",
      },
    ],
  });

const EventId = z
  .string()
  .regex(/^(?:0|[1-9]\d*)$/)
  .meta({
    description:
      "The SSE `id:` field: the change's position in the store-wide sequence (decimal), strictly increasing in commit order. Send it back as `Last-Event-ID` to resume after this event.",
    examples: ["1041"],
  });

const changeEvent = <K extends string, D extends z.ZodType>(kind: K, data: D, id: string, description: string) =>
  z
    .object({
      id: EventId,
      event: z.literal(kind).meta({ description: "The SSE `event:` field." }),
      // By reference: a description here would copy the named schema inline.
      data,
    })
    .meta({ id, description });

/** `plant.created`: a plant was stored; `data` is the plant, exactly as its webhook carries it. */
export const PlantCreatedEvent = changeEvent(
  "plant.created",
  NewPlant,
  "PlantCreatedEvent",
  "A plant was created; `data` is the plant as stored, the same JSON its `plant.created` webhook carries.",
);
/** `plant.updated`: a plant changed; `data` is the plant after the change. */
export const PlantUpdatedEvent = changeEvent(
  "plant.updated",
  NewPlant,
  "PlantUpdatedEvent",
  "A plant was updated or replaced; `data` is the plant after the change, the same JSON its `plant.updated` webhook carries.",
);
/** `plant.deleted`: a plant was removed; `data` is its id. */
export const PlantDeletedEvent = changeEvent(
  "plant.deleted",
  PlantDeletedData,
  "PlantDeletedEvent",
  'A plant was deleted; `data` is `{"id":…}`, the same JSON its `plant.deleted` webhook carries.',
);
/** `reset`: the stream cannot resume where asked: re-list, then continue after its id. */
export const FeedResetEvent = changeEvent(
  "reset",
  FeedResetData,
  "FeedResetEvent",
  "The resume position is older than the change log's retention, or above its head: re-list the plants, then keep this event's `id` as the resume point.",
);

/** One event of `GET /plants/events`, as an SSE parser hands it over (its `data` parsed losslessly). */
export const PlantEvent = z
  .discriminatedUnion("event", [PlantCreatedEvent, PlantUpdatedEvent, PlantDeletedEvent, FeedResetEvent])
  .meta({
    id: "PlantEvent",
    description:
      "One server-sent event of `GET /plants/events`: its `id`, `event` and `data` fields (see the operation for the wire format).",
  });

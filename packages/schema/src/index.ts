export { Int64, INT64_MAX, INT64_MIN, toInt64 } from "./int64.ts";
export {
  NAME_MAX_LENGTH,
  NEW_PLANT_EXAMPLE,
  NewPlant,
  Plant,
  PlantId,
  PlantName,
  PlantPatch,
  PlantTag,
  TAG_MAX_LENGTH,
} from "./plant.ts";
// `Error` is the interface's name for the body; `ErrorBody` is the same schema under a name that
// does not shadow the global `Error` in the importing module. Both are public.
export { ErrorBody as Error, ErrorBody } from "./error.ts";
export { type ErrorCodeEntry, type ErrorCodeName, errorCodeName, ErrorCodes } from "./error-codes.ts";
export {
  JsonDuplicateNameError,
  JsonTooDeepError,
  MAX_JSON_DEPTH,
  parseJsonLossless,
  stringifyJsonLossless,
} from "./json.ts";
export { decodePageCursor, encodePageCursor, PAGE_CURSOR_PATTERN } from "./page-cursor.ts";
export {
  EventPositionText,
  FeedResetData,
  FeedResetEvent,
  PLANT_EVENT_KINDS,
  PlantCreatedEvent,
  PlantDeletedData,
  PlantDeletedEvent,
  PlantEvent,
  PlantUpdatedEvent,
} from "./plant-events.ts";
export { printable, type PrintablePart, printableParts } from "./printable.ts";
export {
  Int64Text,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  ListPlantsQuery,
  PageCursorText,
  PlantIdPath,
  PlantList,
} from "./query.ts";
export { WhoAmI } from "./whoami.ts";

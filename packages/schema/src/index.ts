export { INT64_MAX, INT64_MIN, Int64, toInt64 } from "./int64.ts";
export { NAME_MAX_LENGTH, NewPlant, Plant, PlantId, PlantName, PlantTag, TAG_MAX_LENGTH } from "./plant.ts";
export { ErrorBody } from "./error.ts";
export { ErrorCodes, errorCodeName, type ErrorCodeEntry, type ErrorCodeName } from "./error-codes.ts";
export { parseJsonLossless, stringifyJsonLossless } from "./json.ts";
export { Int64Text, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, ListPlantsQuery, PlantIdPath, PlantList } from "./query.ts";
export { WhoAmI } from "./whoami.ts";

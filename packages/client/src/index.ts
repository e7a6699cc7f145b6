export {
  createPlantStoreClient,
  type PlantStoreClient,
  type PlantStoreClientOptions,
  type RequestOptions,
} from "./create-client.ts";
export type { DeletePlantOptions } from "./delete-plant.ts";
export type { EntityTags } from "./entity-tag.ts";
export {
  type InputIssue,
  PlantStoreError,
  PlantStoreForbiddenError,
  PlantStoreInputError,
  PlantStorePreconditionFailedError,
  PlantStorePreconditionRequiredError,
  PlantStoreProtocolError,
  PlantStoreRateLimitError,
  PlantStoreUnauthorizedError,
} from "./errors.ts";
export type { GetPlantOptions, GetPlantResult, NotModified } from "./get-plant.ts";
export type { ListPlantsOptions, PlantPage } from "./list-plants.ts";
export type { NewPlantInput } from "./new-plant-input.ts";
export type { PlantRevision } from "./plant-revision.ts";
export type { ReplacedPlant, ReplacePlantOptions } from "./replace-plant.ts";
export type { UpdatePlantOptions } from "./update-plant.ts";
export type { Reconnect, StreamOpen, WatchPlantsOptions } from "./watch-plants.ts";
export type { WatchPlantsEvent } from "./watch-plants-event.ts";
export type {
  ErrorCodeName,
  ListPlantsQuery,
  NewPlant,
  Plant,
  PlantList,
  PlantPatch,
  WhoAmI,
} from "@plantstore/schema";

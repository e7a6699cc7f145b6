export {
  createPlantStoreClient,
  type PlantStoreClient,
  type PlantStoreClientOptions,
  type RequestOptions,
} from "./create-client.ts";
export {
  type InputIssue,
  PlantStoreError,
  PlantStoreForbiddenError,
  PlantStoreInputError,
  PlantStoreProtocolError,
  PlantStoreRateLimitError,
  PlantStoreUnauthorizedError,
} from "./errors.ts";
export type { ListPlantsOptions, PlantPage } from "./list-plants.ts";
export type { NewPlantInput } from "./new-plant-input.ts";
export type { Reconnect, WatchPlantsOptions } from "./watch-plants.ts";
export type { WatchPlantsEvent } from "./watch-plants-event.ts";
export type { ErrorCodeName, ListPlantsQuery, NewPlant, Plant, PlantList, WhoAmI } from "@plantstore/schema";

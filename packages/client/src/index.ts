export {
  createPlantStoreClient,
  type PlantStoreClient,
  type PlantStoreClientOptions,
  type RequestOptions,
} from "./create-client.ts";
export {
  PlantStoreError,
  PlantStoreForbiddenError,
  PlantStoreInputError,
  PlantStoreProtocolError,
  PlantStoreRateLimitError,
  PlantStoreUnauthorizedError,
  type InputIssue,
} from "./errors.ts";
export type { NewPlantInput } from "./new-plant-input.ts";
export type { ListPlantsOptions, PlantPage } from "./list-plants.ts";
export type { ErrorCodeName, ListPlantsQuery, NewPlant, Plant, PlantList, WhoAmI } from "@plantstore/schema";

import { ListPlantsQuery, type NewPlant, parseJsonLossless, PlantList } from "@plantstore/schema";

import { readJson200 } from "./error-response.ts";
import { PlantStoreInputError, PlantStoreProtocolError } from "./errors.ts";
import { nextPageQuery } from "./next-page.ts";
import { toPlantId } from "./plant-id.ts";
import type { Connection } from "./send-request.ts";

/** What `listPlants` accepts: the `GET /plants` query, with `after` also as a safe-integer number. */
export type ListPlantsOptions = Omit<ListPlantsQuery, "after"> & { after?: bigint | number };

/** One page of `GET /plants`. */
export type PlantPage = {
  /** The plants of this page, ordered by id, each with its exact id as a bigint. */
  plants: PlantList;
  /**
   * The query of the next page, from the `Link: <…>; rel="next"` header (pass it back to
   * `listPlants`), or undefined on the last page.
   */
  next: ListPlantsQuery | undefined;
};

/**
 * Validates the query with the schema the server reads it with, so a query the server would
 * refuse with INVALID_PARAMETER never leaves the process.
 */
function toQuery(options: ListPlantsOptions): ListPlantsQuery {
  if (typeof options !== "object" || options === null) {
    throw new PlantStoreInputError([{ path: "", message: "list options must be an object" }], "list options");
  }
  const raw: Record<string, unknown> = {};
  if (options.limit !== undefined)
    raw["limit"] = typeof options.limit === "number" ? String(options.limit) : options.limit;
  if (options.after !== undefined) {
    const after = toPlantId(options.after, "after", "list options");
    raw["after"] = typeof after === "bigint" ? after.toString() : after;
  }
  if (options.tag !== undefined) raw["tag"] = options.tag;
  const parsed = ListPlantsQuery.safeParse(raw);
  if (!parsed.success) {
    throw new PlantStoreInputError(
      parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
      "list options",
    );
  }
  return parsed.data;
}

function listUrl(plantsUrl: string, query: ListPlantsQuery): string {
  const search = new URLSearchParams();
  if (query.limit !== undefined) search.set("limit", String(query.limit));
  if (query.after !== undefined) search.set("after", query.after.toString());
  if (query.tag !== undefined) search.set("tag", query.tag);
  const text = search.toString();
  return text === "" ? plantsUrl : `${plantsUrl}?${text}`;
}

/** `GET /plants`: one page of plants and the query of the next page. */
export async function listPlants(
  connection: Connection,
  options: ListPlantsOptions,
  signal: AbortSignal | undefined,
): Promise<PlantPage> {
  const url = listUrl(connection.url("/plants"), toQuery(options));
  const response = await connection.send(url, { method: "GET", signal });
  const { status } = response;
  // The interface defines only 200 as success for a listing.
  const body = await readJson200(response, parseJsonLossless);
  const plants = PlantList.safeParse(body);
  if (!plants.success) {
    throw new PlantStoreProtocolError(`HTTP ${status}: the response body is not a list of plants`, {
      status,
      cause: plants.error,
    });
  }
  return { plants: plants.data, next: nextPageQuery(response.headers.get("link"), url, status) };
}

/**
 * Every plant from `options.after` on (or from the start), page after page, following the
 * `rel="next"` links. Because each page starts after the last id of the one before, a store written to meanwhile never makes this
 * skip or repeat a plant that was there all along.
 */
export async function* iteratePlants(
  connection: Connection,
  options: ListPlantsOptions,
  signal: AbortSignal | undefined,
): AsyncGenerator<NewPlant, void, undefined> {
  let query: ListPlantsOptions | undefined = options;
  while (query !== undefined) {
    const page = await listPlants(connection, query, signal);
    yield* page.plants;
    const previous = query.after === undefined ? undefined : BigInt(query.after);
    // A cursor that does not move forward would loop for ever: ids only grow along the pages.
    if (page.next?.after !== undefined && previous !== undefined && page.next.after <= previous) {
      throw new PlantStoreProtocolError(`the next page's cursor ${page.next.after} does not move past ${previous}`, {
        status: 200,
      });
    }
    query = page.next;
  }
}

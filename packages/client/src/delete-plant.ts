import { conditionHeader, type EntityTags } from "./entity-tag.ts";
import { throwErrorResponse } from "./error-response.ts";
import { PlantStoreProtocolError } from "./errors.ts";
import { toPathId } from "./plant-id.ts";
import type { Connection } from "./send-request.ts";

export type DeletePlantOptions = {
  /** Delete only the revision this ETag names: the server refuses (412) when the plant changed since. */
  ifMatch?: EntityTags;
  signal?: AbortSignal;
};

/** `DELETE /plants/{id}`: resolves on 204; the id is free for a new plant afterwards. */
export async function deletePlant(
  connection: Connection,
  id: bigint | number,
  options: DeletePlantOptions,
): Promise<void> {
  const url = connection.url(`/plants/${toPathId(id)}`);
  const headers: Record<string, string> = {};
  if (options.ifMatch !== undefined) headers["If-Match"] = conditionHeader(options.ifMatch, "ifMatch");
  const response = await connection.send(url, { method: "DELETE", headers, signal: options.signal });
  const { status } = response;
  if (status === 204) {
    // No body is expected; release the connection without reading one.
    await response.body?.cancel();
    return;
  }
  // The interface answers a deletion with 204 only; another 2xx cannot be trusted to mean "deleted".
  if (status >= 200 && status < 300)
    throw new PlantStoreProtocolError(`HTTP ${status}: expected 204 or an error status`, { status });
  return throwErrorResponse(response);
}

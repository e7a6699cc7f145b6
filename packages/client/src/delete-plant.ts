import { PlantId } from "@plantstore/schema";

import { throwErrorResponse } from "./error-response.ts";
import { PlantStoreInputError, PlantStoreProtocolError } from "./errors.ts";
import { toPlantId } from "./plant-id.ts";
import type { Connection } from "./send-request.ts";

function toId(id: bigint | number): bigint {
  const parsed = PlantId.safeParse(toPlantId(id, "id", "id"));
  if (!parsed.success) {
    throw new PlantStoreInputError(
      parsed.error.issues.map((issue) => ({ path: "id", message: issue.message })),
      "id",
    );
  }
  return parsed.data;
}

/** `DELETE /plants/{id}`: resolves on 204; the id is free for a new plant afterwards. */
export async function deletePlant(
  connection: Connection,
  id: bigint | number,
  signal: AbortSignal | undefined,
): Promise<void> {
  const url = connection.url(`/plants/${toId(id)}`);
  const response = await connection.send(url, { method: "DELETE", signal });
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

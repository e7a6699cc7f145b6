import { conditionHeader, type EntityTags, requiredETag } from "./entity-tag.ts";
import { PlantStoreProtocolError } from "./errors.ts";
import { toPathId } from "./plant-id.ts";
import { type PlantRevision, readPlantRevision } from "./plant-revision.ts";
import type { Connection } from "./send-request.ts";

export type GetPlantOptions = {
  /**
   * Entity tags the caller holds (or `"*"`): when the plant's current one is among them, the
   * server answers 304 without the plant and the call resolves with `{ notModified: true }`.
   */
  ifNoneMatch?: EntityTags;
  signal?: AbortSignal;
};

/** What `getPlant` resolves with: the plant and its ETag, or, for a matching `ifNoneMatch`, only that it is unchanged. */
export type GetPlantResult = ({ notModified: false } & PlantRevision) | NotModified;

/** 304: the plant is still the revision `etag` names, one of those sent in `ifNoneMatch`. */
export type NotModified = { notModified: true; etag: string };

/** `GET /plants/{id}`: the plant and its ETag; 304 (only when `ifNoneMatch` is given) resolves as NotModified. */
export async function getPlant(
  connection: Connection,
  id: bigint | number,
  options: GetPlantOptions,
): Promise<GetPlantResult> {
  const pathId = toPathId(id);
  const headers: Record<string, string> = {};
  if (options.ifNoneMatch !== undefined) headers["If-None-Match"] = conditionHeader(options.ifNoneMatch, "ifNoneMatch");
  const response = await connection.send(connection.url(`/plants/${pathId}`), {
    method: "GET",
    headers,
    signal: options.signal,
  });
  if (response.status === 304) {
    // Without a condition the server has nothing to compare with: a 304 cannot be about this request.
    if (options.ifNoneMatch === undefined)
      throw new PlantStoreProtocolError("HTTP 304: answered not modified to a request without If-None-Match", {
        status: 304,
      });
    const etag = requiredETag(response);
    // A 304 has no body (RFC 9110 §15.4.5); reading the empty one ends the exchange, where
    // cancelling it shows in a browser as an aborted request.
    await response.arrayBuffer();
    return { notModified: true, etag };
  }
  return { notModified: false, ...(await readPlantRevision(response, pathId, [200])) };
}

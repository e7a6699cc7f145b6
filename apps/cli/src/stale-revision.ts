import { PlantStorePreconditionFailedError } from "@plantstore/client";

/**
 * A 412 that says which revision was sent (as If-Match) and which one is current, so the reader
 * knows what to re-read: `plants update` and `plants delete` both answer it so.
 */
export function staleRevision(id: bigint, sent: string, error: PlantStorePreconditionFailedError): Error {
  const current = error.currentETag === undefined ? "unknown (no ETag in the answer)" : error.currentETag;
  return new PlantStorePreconditionFailedError(
    error.code,
    `plant ${id} is no longer revision ${sent} (sent as If-Match): it is now revision ${current}. ` +
      `Nothing was changed; read it again (plantstore plants get ${id}) and retry`,
    error.currentETag,
  );
}

import {
  PlantStoreError,
  PlantStoreInputError,
  PlantStoreProtocolError,
  PlantStoreUnauthorizedError,
} from "@plantstore/client";

/**
 * What a person reads for a failed call. The server's own message is shown as it is (it never
 * carries a secret); nothing here ever includes the token.
 */
export function errorText(error: unknown): string {
  if (error instanceof PlantStoreUnauthorizedError) return `The token was not accepted: ${error.message}`;
  if (error instanceof PlantStoreError) return `The server refused (${error.status}): ${error.message}`;
  if (error instanceof PlantStoreInputError) {
    return `Not sent: ${error.issues.map((i) => (i.path === "" ? i.message : `${i.path} ${i.message}`)).join("; ")}`;
  }
  if (error instanceof PlantStoreProtocolError) return `No usable answer from the server: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

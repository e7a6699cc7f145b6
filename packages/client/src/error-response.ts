import { PlantStoreProtocolError } from "./errors.ts";
import { readPlantResponse } from "./read-response.ts";

/**
 * Throws the typed error a non-2xx response stands for. The mapping from an `Error` body to a
 * typed error lives in one place, readPlantResponse's error branch, which throws for every status
 * outside 2xx; every operation shares it, so they all fail alike.
 */
export async function throwErrorResponse(response: Response): Promise<never> {
  await readPlantResponse(response);
  throw new PlantStoreProtocolError(`HTTP ${response.status}: expected an error status`, { status: response.status });
}

/** Reads a 2xx body as text, or throws the PlantStoreProtocolError for an unreadable one. */
export async function readBodyText(response: Response): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new PlantStoreProtocolError(`HTTP ${response.status}: the response body could not be read`, {
      status: response.status,
      cause: error,
    });
  }
}

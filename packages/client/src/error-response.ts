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
async function readBodyText(response: Response): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new PlantStoreProtocolError(`HTTP ${response.status}: the response body could not be read`, {
      status: response.status,
      cause: error,
    });
  }
}

/**
 * The body of an answer whose only success is 200, parsed as JSON (`parse`: lossless where ids
 * can exceed 2^53); any other 2xx is a protocol error, an error status throws its typed error.
 */
export function readJson200(response: Response, parse: (text: string) => unknown): Promise<unknown> {
  return readJsonOn(response, [200], parse);
}

/** As readJson200, for an operation whose successes are `statuses` (PUT: 200 replaced, 201 created). */
export async function readJsonOn(
  response: Response,
  statuses: readonly number[],
  parse: (text: string) => unknown,
): Promise<unknown> {
  const { status } = response;
  if (!statuses.includes(status)) {
    if (status >= 200 && status < 300)
      throw new PlantStoreProtocolError(`HTTP ${status}: expected ${statuses.join(" or ")} or an error status`, {
        status,
      });
    return throwErrorResponse(response);
  }
  const text = await readBodyText(response);
  try {
    return parse(text);
  } catch (error) {
    throw new PlantStoreProtocolError(`HTTP ${status}: the response body is not JSON`, { status, cause: error });
  }
}

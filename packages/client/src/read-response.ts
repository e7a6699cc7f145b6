import { ErrorBody, parseJsonLossless, Plant } from "@plantstore/schema";

import { PlantStoreProtocolError, toPlantStoreError } from "./errors.ts";

/**
 * parseJsonLossless turns every integer literal into a bigint, but the Error body's `error` is an
 * int32 number. Any int32 is exact as a number, and anything larger fails the int32 check anyway.
 */
function errorFieldAsNumber(body: unknown): unknown {
  if (typeof body !== "object" || body === null || !("error" in body) || typeof body.error !== "bigint") return body;
  return { ...body, error: Number(body.error) };
}

/** Turns a `POST /plants` response into a Plant, or throws the typed error it stands for. */
export async function readPlantResponse(response: Response): Promise<Plant> {
  const { status } = response;
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    throw new PlantStoreProtocolError(`HTTP ${status}: the response body could not be read`, { status, cause: error });
  }
  let body: unknown;
  try {
    body = parseJsonLossless(text);
  } catch (error) {
    throw new PlantStoreProtocolError(`HTTP ${status}: the response body is not JSON`, { status, cause: error });
  }

  if (status === 200) {
    const plant = Plant.safeParse(body);
    if (!plant.success) {
      throw new PlantStoreProtocolError("HTTP 200: the response body is not a Plant", { status, cause: plant.error });
    }
    return plant.data;
  }

  // The interface defines only 200 as success; another 2xx cannot be trusted to mean "created".
  if (status >= 200 && status < 300) {
    throw new PlantStoreProtocolError(`HTTP ${status}: expected 200 or an error status`, { status });
  }
  const error = ErrorBody.safeParse(errorFieldAsNumber(body));
  if (!error.success) {
    throw new PlantStoreProtocolError(`HTTP ${status}: the response body is not an Error`, {
      status,
      cause: error.error,
    });
  }
  throw toPlantStoreError(status, error.data.error, error.data.message, response.headers);
}

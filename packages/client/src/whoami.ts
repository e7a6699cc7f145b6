import { WhoAmI } from "@plantstore/schema";

import { readJson200 } from "./error-response.ts";
import { PlantStoreProtocolError } from "./errors.ts";
import type { Connection } from "./send-request.ts";

/** `GET /whoami`: which credential the client is using, its scopes and when it expires. */
export async function whoAmI(connection: Connection, signal: AbortSignal | undefined): Promise<WhoAmI> {
  const response = await connection.send(connection.url("/whoami"), { method: "GET", signal });
  const { status } = response;
  const body = await readJson200(response, JSON.parse);
  const parsed = WhoAmI.safeParse(body);
  if (!parsed.success)
    throw new PlantStoreProtocolError("HTTP 200: the response body is not a WhoAmI", { status, cause: parsed.error });
  return parsed.data;
}

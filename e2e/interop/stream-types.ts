import type { paths } from "./generated/openapi-typescript.js";
import type { watchPlantsResponse200 } from "./generated/orval.js";

/**
 * What the generators make of `GET /plants/events`'s 200 body: the stream's text, a `string`, not
 * an array of events that would only arrive once the endless body ended. Compiled strictly beside
 * the generated code: a type other than `string` fails the compilation.
 */

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type StreamBody = paths["/plants/events"]["get"]["responses"][200]["content"]["text/event-stream"];

export const openapiTypescriptStreamBody: Same<StreamBody, string> = true;
export const orvalStreamBody: Same<watchPlantsResponse200["data"], string> = true;

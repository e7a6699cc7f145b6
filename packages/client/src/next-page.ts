import { ListPlantsQuery } from "@plantstore/schema";
import LinkHeader from "http-link-header";

import { PlantStoreProtocolError } from "./errors.ts";

const CURSOR_PARAMETERS = ["limit", "after", "tag"] as const;

/**
 * The query of the next page, from the RFC 8288 `Link: <…>; rel="next"` header of a `GET /plants`
 * answer, or undefined when there is no next link (the last page). Only the query is taken from
 * the link, not its path: a link relative to the server's root would lose a proxy's path prefix,
 * while the client already knows where the plants are.
 */
export function nextPageQuery(link: string | null, requestUrl: string, status: number): ListPlantsQuery | undefined {
  if (link === null) return undefined;
  const refused = (why: string, cause?: unknown) =>
    new PlantStoreProtocolError(`HTTP ${status}: the Link header ${why}: ${link}`, { status, cause });
  let next: LinkHeader.Reference | undefined;
  try {
    next = LinkHeader.parse(link).rel("next")[0];
  } catch (error) {
    throw refused("is not RFC 8288", error);
  }
  if (next === undefined) return undefined;
  let target: URL;
  try {
    target = new URL(next.uri, requestUrl);
  } catch (error) {
    throw refused('has a rel="next" target that is not a URL', error);
  }
  const raw: Record<string, string> = {};
  for (const name of CURSOR_PARAMETERS) {
    const values = target.searchParams.getAll(name);
    if (values.length > 1) throw refused(`repeats ${name}`);
    if (values[0] !== undefined) raw[name] = values[0];
  }
  // The same schema the server reads its query with: a cursor it would refuse is refused here.
  const query = ListPlantsQuery.safeParse(raw);
  if (!query.success) throw refused('has a rel="next" target with an invalid query', query.error);
  if (query.data.after === undefined) throw refused('has a rel="next" target without an after cursor');
  return query.data;
}

import { ListPlantsQuery } from "@plantstore/schema";
import { InvalidArgumentError } from "commander";

const limitText = ListPlantsQuery.shape.limit;

/** Parses `--limit` with the schema the server reads `?limit=` with, so both accept the same text. */
export function parseLimit(text: string): number {
  const parsed = limitText.safeParse(text);
  if (!parsed.success || parsed.data === undefined) {
    const message = parsed.error?.issues[0]?.message ?? "must be an integer";
    throw new InvalidArgumentError(`${message[0]?.toUpperCase()}${message.slice(1)}.`);
  }
  return parsed.data;
}

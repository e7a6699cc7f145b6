import { type ListPlantsOptions, type NewPlant, type PlantPage, PlantStoreInputError } from "@plantstore/client";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, stringifyJsonLossless } from "@plantstore/schema";
import type { Command } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions, usageError } from "../connect.ts";
import type { Io } from "../io.ts";
import { parseId } from "../parse-id.ts";
import { parseLimit } from "../parse-limit.ts";
import { plantLine } from "../plant-line.ts";

type ListOptions = ConnectionOptions & {
  limit?: number;
  after?: bigint;
  tag?: string;
  all?: boolean;
  json?: boolean;
};

/**
 * Prints pages as they arrive, so `--all` over a large store starts at once and holds one page in
 * memory. `--json` writes one JSON array whatever the number of pages, byte for byte what
 * stringifyJsonLossless would make of the whole list.
 */
function createPrinter(io: Io, json: boolean) {
  let printed = 0;
  return {
    page(plants: readonly NewPlant[]) {
      if (json) {
        for (const plant of plants) io.stdout(`${printed++ === 0 ? "[" : ","}${stringifyJsonLossless(plant)}`);
      } else {
        io.stdout(plants.map(plantLine).join(""));
        printed += plants.length;
      }
    },
    end() {
      if (json) io.stdout(printed === 0 ? "[]\n" : "]\n");
      else if (printed === 0) io.stdout("no plants\n");
    },
  };
}

export function addPlantsListCommand(plants: Command, io: Io): void {
  const list = plants
    .command("list")
    .description(
      "List plants ordered by id (GET /plants), one page, or every page with --all. " +
        "Paging by id never skips or repeats a plant that was there all along, even while others are added.",
    )
    .option("--limit <n>", `plants per page, 1 to ${LIST_LIMIT_MAX} (default: ${LIST_LIMIT_DEFAULT})`, parseLimit)
    .option("--after <id>", "only plants with an id greater than this one: where the previous page ended", parseId)
    .option("--tag <tag>", "only plants with exactly this tag")
    .option("--all", "follow the pages to the end, printing every plant");
  addConnectionOptions(list)
    .option("--json", "print a JSON array of {id, name, tag} with exact int64 ids instead of lines")
    .action(async (options: ListOptions, command: Command) => {
      const client = connect(command, io, options);
      const printer = createPrinter(io, options.json === true);
      let query: ListPlantsOptions | undefined = {
        ...(options.limit !== undefined ? { limit: options.limit } : {}),
        ...(options.after !== undefined ? { after: options.after } : {}),
        ...(options.tag !== undefined ? { tag: options.tag } : {}),
      };
      let page: PlantPage;
      do {
        try {
          page = await client.listPlants(query);
        } catch (error) {
          // The same checks the server makes, failed before sending: the caller's input is at fault.
          if (error instanceof PlantStoreInputError) usageError(command, error.message);
          throw error;
        }
        printer.page(page.plants);
        query = options.all === true ? page.next : undefined;
      } while (query !== undefined);
      printer.end();
      // On stderr, so stdout stays exactly the listing (or the JSON array) for scripts.
      if (options.all !== true && page.next?.after !== undefined) {
        io.stderr(
          `plantstore: more plants follow; continue with --after ${page.next.after}, or list them all with --all\n`,
        );
      }
    });
}

import { PlantStorePreconditionFailedError } from "@plantstore/client";
import { stringifyJsonLossless } from "@plantstore/schema";
import type { Command } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions } from "../connect.ts";
import type { Io } from "../io.ts";
import { parseETag } from "../parse-etag.ts";
import { parseId } from "../parse-id.ts";
import { staleRevision } from "../stale-revision.ts";

type DeleteOptions = ConnectionOptions & { ifMatch?: string; json?: boolean };

export function addPlantsDeleteCommand(plants: Command, io: Io): void {
  const remove = plants
    .command("delete")
    .description(
      "Delete a plant (DELETE /plants/{id}); its id is free for a new plant afterwards. " +
        "No plant under that id: exit code 1 (error 40401). " +
        "With --if-match, only if it is still that revision; changed meanwhile: exit code 1 (error 41200) " +
        "naming the revision sent and the current one, and nothing is deleted.",
    )
    .argument("<id>", "the plant's id: a decimal int64", parseId)
    .option("--if-match <etag>", "delete only this revision: its ETag, as `plants get` prints it", parseETag);
  addConnectionOptions(remove)
    .option("--json", 'print {"id":<id>,"deleted":true} instead of a sentence')
    .action(async (id: bigint, options: DeleteOptions, command: Command) => {
      const { ifMatch } = options;
      try {
        await connect(command, io, options).deletePlant(id, ifMatch === undefined ? {} : { ifMatch });
      } catch (error) {
        if (ifMatch !== undefined && error instanceof PlantStorePreconditionFailedError)
          throw staleRevision(id, ifMatch, error);
        throw error;
      }
      io.stdout(options.json === true ? `${stringifyJsonLossless({ id, deleted: true })}\n` : `deleted plant ${id}\n`);
    });
}

import { stringifyJsonLossless } from "@plantstore/schema";
import type { Command } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions } from "../connect.ts";
import type { Io } from "../io.ts";
import { parseId } from "../parse-id.ts";

type DeleteOptions = ConnectionOptions & { json?: boolean };

export function addPlantsDeleteCommand(plants: Command, io: Io): void {
  const remove = plants
    .command("delete")
    .description(
      "Delete a plant (DELETE /plants/{id}); its id is free for a new plant afterwards. " +
        "No plant under that id: exit code 1 (error 40401).",
    )
    .argument("<id>", "the plant's id: a decimal int64", parseId);
  addConnectionOptions(remove)
    .option("--json", 'print {"id":<id>,"deleted":true} instead of a sentence')
    .action(async (id: bigint, options: DeleteOptions, command: Command) => {
      await connect(command, io, options).deletePlant(id);
      io.stdout(options.json === true ? `${stringifyJsonLossless({ id, deleted: true })}\n` : `deleted plant ${id}\n`);
    });
}

import { type Plant, PlantStoreInputError } from "@plantstore/client";
import { stringifyJsonLossless } from "@plantstore/schema";
import type { Command } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions, usageError } from "../connect.ts";
import type { Io } from "../io.ts";
import { parseId } from "../parse-id.ts";

type CreateOptions = ConnectionOptions & {
  id: bigint;
  name: string;
  tag?: string;
  json?: boolean;
};

function describePlant(id: bigint, plant: Plant): string {
  return `created plant ${id}: ${plant.name}${plant.tag === undefined ? "" : ` (${plant.tag})`}\n`;
}

export function addPlantsCreateCommand(plants: Command, io: Io): void {
  const create = plants
    .command("create")
    .description(
      "Create a plant (POST /plants). Sending the same plant again is safe; a different one under a taken id is refused.",
    )
    .requiredOption("--id <id>", "the plant's id: a decimal int64", parseId)
    .requiredOption("--name <name>", "the plant's name")
    .option("--tag <tag>", "the plant's tag");
  addConnectionOptions(create)
    .option("--json", "print the created Plant as JSON instead of a sentence")
    .action(async (options: CreateOptions, command: Command) => {
      const client = connect(command, io, options);
      const { id, name, tag } = options;
      const newPlant = tag === undefined ? { id, name } : { id, name, tag };
      let plant: Plant;
      try {
        plant = await client.createPlant(newPlant);
      } catch (error) {
        // The same checks the server makes, failed before sending: the caller's input is at fault.
        if (error instanceof PlantStoreInputError) usageError(command, error.message);
        throw error;
      }
      io.stdout(options.json === true ? `${stringifyJsonLossless(plant)}\n` : describePlant(options.id, plant));
    });
}

import type { Command } from "commander";
import { createPlantStoreClient, PlantStoreInputError, type Plant, type PlantStoreClient } from "@plantstore/client";
import { stringifyJsonLossless } from "@plantstore/schema";
import { ExitCode, type Io } from "../io.ts";
import { parseId } from "../parse-id.ts";

type CreateOptions = {
  id: bigint;
  name: string;
  tag?: string;
  url?: string;
  token?: string;
  json?: boolean;
};

/** Usage errors go through commander, so they print and exit like its own (exit code 2). */
function usageError(command: Command, message: string): never {
  return command.error(`error: ${message}`, { exitCode: ExitCode.usage, code: "plantstore.usage" });
}

function connect(command: Command, io: Io, options: CreateOptions): PlantStoreClient {
  // Flags override the environment.
  const baseUrl = options.url ?? io.env.url;
  const token = options.token ?? io.env.token;
  if (baseUrl === undefined) usageError(command, "no service URL: pass --url or set PLANTSTORE_URL");
  if (token === undefined) usageError(command, "no bearer token: pass --token or set PLANTSTORE_TOKEN");
  try {
    return createPlantStoreClient({ baseUrl, token });
  } catch (error) {
    return usageError(command, (error as Error).message);
  }
}

function describePlant(id: bigint, plant: Plant): string {
  return `created plant ${id}: ${plant.name}${plant.tag === undefined ? "" : ` (${plant.tag})`}\n`;
}

export function addPlantsCreateCommand(plants: Command, io: Io): void {
  plants
    .command("create")
    .description(
      "Create a plant (POST /plants). Sending the same plant again is safe; a different one under a taken id is refused.",
    )
    .requiredOption("--id <id>", "the plant's id: a decimal int64", parseId)
    .requiredOption("--name <name>", "the plant's name")
    .option("--tag <tag>", "the plant's tag")
    .option("--url <url>", "the service's base URL (default: $PLANTSTORE_URL)")
    .option("--token <token>", "bearer token (default: $PLANTSTORE_TOKEN, which keeps it out of process lists)")
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

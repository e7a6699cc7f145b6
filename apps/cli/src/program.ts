import { PlantStoreError, PlantStoreProtocolError } from "@plantstore/client";
import { Command, CommanderError } from "commander";

import { addPlantsCreateCommand } from "./commands/plants-create.ts";
import { addPlantsDeleteCommand } from "./commands/plants-delete.ts";
import { addPlantsGetCommand } from "./commands/plants-get.ts";
import { addPlantsListCommand } from "./commands/plants-list.ts";
import { addPlantsUpdateCommand } from "./commands/plants-update.ts";
import { addPlantsWatchCommand } from "./commands/plants-watch.ts";
import { addWhoAmICommand } from "./commands/whoami.ts";
import { ExitCode, type Io } from "./io.ts";
import { packageVersion } from "./version.ts";

function createProgram(io: Io): Command {
  // Settings made before `.command()` are inherited by every subcommand.
  const program = new Command()
    .name("plantstore")
    .description("Command line for a Plant Store service.")
    .version(packageVersion())
    .configureOutput({ writeOut: (text) => io.stdout(text), writeErr: (text) => io.stderr(text) })
    .showHelpAfterError("(add --help for usage)")
    .exitOverride();

  const plants = program.command("plants").description("Work with plants.");
  addPlantsCreateCommand(plants, io);
  addPlantsListCommand(plants, io);
  addPlantsGetCommand(plants, io);
  addPlantsUpdateCommand(plants, io);
  addPlantsDeleteCommand(plants, io);
  addPlantsWatchCommand(plants, io);
  addWhoAmICommand(program, io);
  return program;
}

function describeFailure(error: unknown): string {
  if (error instanceof PlantStoreError) {
    const code = error.codeName === undefined ? `${error.code}` : `${error.code} ${error.codeName}`;
    return `${error.message} (error ${code}, HTTP ${error.status})`;
  }
  if (error instanceof PlantStoreProtocolError) return error.message;
  return `unexpected failure: ${error instanceof Error ? error.message : String(error)}`;
}

/** Runs one command line (without `node` and the script) and returns the exit code. */
export async function run(args: readonly string[], io: Io): Promise<number> {
  try {
    await createProgram(io).parseAsync(args, { from: "user" });
    return ExitCode.ok;
  } catch (error) {
    // Commander has already printed its message (or the help); only the exit code is left to decide.
    if (error instanceof CommanderError) return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    io.stderr(`plantstore: ${describeFailure(error)}\n`);
    return ExitCode.failure;
  }
}

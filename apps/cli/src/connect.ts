import { createPlantStoreClient, type PlantStoreClient } from "@plantstore/client";
import type { Command } from "commander";

import { ExitCode, type Io } from "./io.ts";

/** `--url` and `--token`, which every command that talks to the service takes. */
export type ConnectionOptions = { url?: string; token?: string };

export function addConnectionOptions(command: Command): Command {
  return command
    .option("--url <url>", "the service's base URL (default: $PLANTSTORE_URL)")
    .option("--token <token>", "bearer token (default: $PLANTSTORE_TOKEN, which keeps it out of process lists)");
}

/** Usage errors go through commander, so they print and exit like its own (exit code 2). */
export function usageError(command: Command, message: string): never {
  return command.error(`error: ${message}`, { exitCode: ExitCode.usage, code: "plantstore.usage" });
}

/** A client for the service named by the flags, else the environment; a missing or malformed one is bad usage. */
export function connect(command: Command, io: Io, options: ConnectionOptions): PlantStoreClient {
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

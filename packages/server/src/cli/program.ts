#!/usr/bin/env -S node --max-semi-space-size=8
import { Command, CommanderError } from "commander";

import { addMigrateCommand } from "./cli/migrate-command.ts";
import { addServeCommand } from "./cli/serve-command.ts";
import { addTokensCommand } from "./cli/tokens-command.ts";
import { addWebhooksCommand } from "./cli/webhooks-command.ts";

const program = new Command()
  .name("plantstore-server")
  .description("Run and administer a Plant Store service.")
  .showHelpAfterError()
  .exitOverride();

addServeCommand(program);
addMigrateCommand(program);
addWebhooksCommand(program);
addTokensCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Bad usage exits 2, a failed command 1 with its message (commander has printed usage errors already).
  if (error instanceof CommanderError) {
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  process.stderr.write(`plantstore-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

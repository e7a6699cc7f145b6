import { Command, CommanderError } from "commander";

import { addMigrateCommand } from "./migrate-command.ts";
import { addServeCommand } from "./serve-command.ts";
import { addTokensCommand } from "./tokens-command.ts";
import { addWebhooksCommand } from "./webhooks-command.ts";

// plantstore-server: its commands composed and run on process.argv; imported by ../bin.ts once
// the Node version is known to be supported.

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

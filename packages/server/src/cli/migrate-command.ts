import type { Command } from "commander";

import { openStore } from "../storage/open-store.ts";
import { configFrom, databaseUrlOption } from "./command-config.ts";
import { openNoted } from "./database-note.ts";

/** `plantstore-server migrate`: apply pending migrations and exit, e.g. before starting several servers. */
export function addMigrateCommand(program: Command): void {
  program
    .command("migrate")
    .description("Apply pending database migrations and exit.")
    .addOption(databaseUrlOption("sqlite:<path>, sqlite::memory: or postgres://…"))
    .action(async (options: { databaseUrl?: string }) => {
      const config = configFrom(options);
      const store = await openNoted(config.databaseUrl, () =>
        openStore(config.databaseUrl, { postgres: config.postgres }),
      );
      await store.close();
      process.stdout.write("migrations applied\n");
    });
}

import type { WhoAmI } from "@plantstore/client";
import { printable } from "@plantstore/schema";
import type { Command } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions } from "../connect.ts";
import type { Io } from "../io.ts";

type WhoAmIOptions = ConnectionOptions & { json?: boolean };

function describeCredential(who: WhoAmI): string {
  const name = who.name === undefined ? "" : ` "${printable(who.name)}"`;
  return [
    `${who.kind} token ${printable(who.id)}${name}`,
    `scopes: ${who.scopes.length === 0 ? "(none)" : who.scopes.map(printable).join(" ")}`,
    `expires: ${who.expiresAt ?? "never"}`,
    "",
  ].join("\n");
}

export function addWhoAmICommand(program: Command, io: Io): void {
  const whoami = program
    .command("whoami")
    .description(
      "Show which token the CLI uses (GET /whoami): its kind, id, name, scopes and expiry; never the secret.",
    );
  addConnectionOptions(whoami)
    .option("--json", "print the answer as JSON")
    .action(async (options: WhoAmIOptions, command: Command) => {
      const who = await connect(command, io, options).whoAmI();
      io.stdout(options.json === true ? `${JSON.stringify(who)}\n` : describeCredential(who));
    });
}

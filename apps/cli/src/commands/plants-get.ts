import type { Command } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions } from "../connect.ts";
import type { Io } from "../io.ts";
import { parseId } from "../parse-id.ts";
import { plantLine, revisionJson } from "../plant-line.ts";

type GetOptions = ConnectionOptions & { json?: boolean };

export function addPlantsGetCommand(plants: Command, io: Io): void {
  const get = plants
    .command("get")
    .description(
      "Show one plant (GET /plants/{id}) and its ETag, the revision `plants update --if-match` names. " +
        "No plant under that id: exit code 1 (error 40401).",
    )
    .argument("<id>", "the plant's id: a decimal int64", parseId);
  addConnectionOptions(get)
    .option("--json", 'print {"plant":{"id","name","tag"},"etag":"\\"…\\""} instead of lines')
    .action(async (id: bigint, options: GetOptions, command: Command) => {
      const revision = await connect(command, io, options).getPlant(id);
      io.stdout(
        options.json === true ? revisionJson(revision) : `${plantLine(revision.plant)}ETag: ${revision.etag}\n`,
      );
    });
}

import {
  type PlantPatch,
  type PlantRevision,
  PlantStoreInputError,
  PlantStorePreconditionFailedError,
} from "@plantstore/client";
import { PlantName, PlantTag } from "@plantstore/schema";
import { type Command, Option } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions, usageError } from "../connect.ts";
import type { Io } from "../io.ts";
import { parseETag } from "../parse-etag.ts";
import { parseId } from "../parse-id.ts";
import { plantLine, revisionJson } from "../plant-line.ts";
import { staleRevision } from "../stale-revision.ts";

type UpdateOptions = ConnectionOptions & {
  name?: string;
  tag?: string;
  clearTag?: boolean;
  ifMatch?: string;
  json?: boolean;
};

/** The merge patch the flags ask for; refused as bad usage before anything is sent, the GET included. */
function toPatch(command: Command, options: UpdateOptions): PlantPatch {
  const patch: PlantPatch = {};
  if (options.name !== undefined) patch.name = options.name;
  if (options.tag !== undefined) patch.tag = options.tag;
  if (options.clearTag === true) patch.tag = null;
  if (Object.keys(patch).length === 0) usageError(command, "nothing to change: pass --name, --tag or --clear-tag");
  for (const [field, schema, value] of [
    ["name", PlantName, patch.name],
    ["tag", PlantTag, patch.tag],
  ] as const) {
    const parsed = value === undefined || value === null ? undefined : schema.safeParse(value);
    if (parsed?.success === false) usageError(command, `invalid patch: ${field} ${parsed.error.issues[0]?.message}`);
  }
  return patch;
}

export function addPlantsUpdateCommand(plants: Command, io: Io): void {
  const update = plants
    .command("update")
    .description(
      "Change a plant's name or tag (PATCH /plants/{id}), only if it is still the revision --if-match names. " +
        "Without --if-match it reads the current ETag first and says so on stderr. " +
        "Changed meanwhile: exit code 1 (error 41200) naming the revision sent and the current one.",
    )
    .argument("<id>", "the plant's id: a decimal int64", parseId)
    .option("--name <name>", "the new name")
    .addOption(new Option("--tag <tag>", "the new tag").conflicts("clearTag"))
    .option("--clear-tag", "remove the tag")
    .option("--if-match <etag>", "the ETag of the revision to change, as `plants get` prints it", parseETag);
  addConnectionOptions(update)
    .option("--json", 'print {"plant":{"id","name","tag"},"etag":"\\"…\\""} instead of lines')
    .action(async (id: bigint, options: UpdateOptions, command: Command) => {
      const patch = toPatch(command, options);
      const client = connect(command, io, options);
      let ifMatch = options.ifMatch;
      if (ifMatch === undefined) {
        ifMatch = (await client.getPlant(id)).etag;
        // On stderr, so stdout stays the result alone for scripts.
        io.stderr(`plantstore: no --if-match: read plant ${id} first, updating revision ${ifMatch} only\n`);
      }
      let changed: PlantRevision;
      try {
        changed = await client.updatePlant(id, patch, { ifMatch });
      } catch (error) {
        if (error instanceof PlantStoreInputError) usageError(command, error.message);
        if (error instanceof PlantStorePreconditionFailedError) throw staleRevision(id, ifMatch, error);
        throw error;
      }
      io.stdout(
        options.json === true
          ? revisionJson(changed)
          : `updated plant ${plantLine(changed.plant)}ETag: ${changed.etag}\n`,
      );
    });
}

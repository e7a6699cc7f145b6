import { PlantStoreInputError, type Reconnect, type WatchPlantsEvent } from "@plantstore/client";
import { printable, stringifyJsonLossless } from "@plantstore/schema";
import type { Command } from "commander";

import { addConnectionOptions, connect, type ConnectionOptions, usageError } from "../connect.ts";
import type { Io } from "../io.ts";
import { parsePosition } from "../parse-position.ts";

type WatchOptions = ConnectionOptions & { tag?: string; after?: bigint; json?: boolean };

/** `<position> created 41: Basil (herb)`, `<position> deleted 41`, `<position> reset`. */
function describeEvent(event: WatchPlantsEvent): string {
  switch (event.type) {
    case "plant.created":
    case "plant.updated": {
      const { plant } = event;
      const verb = event.type === "plant.created" ? "created" : "updated";
      const tag = plant.tag === undefined ? "" : ` (${printable(plant.tag)})`;
      return `${event.position} ${verb} ${plant.id}: ${printable(plant.name)}${tag}\n`;
    }
    case "plant.deleted":
      return `${event.position} deleted ${event.id}\n`;
    case "reset":
      return `${event.position} reset\n`;
  }
}

function describeReconnect({ delayMs, after, cause }: Reconnect): string {
  const resume = after === undefined ? "" : `, resuming after position ${after}`;
  return `plantstore: ${cause.message}; reconnecting in ${(delayMs / 1000).toFixed(1)} s${resume}\n`;
}

export function addPlantsWatchCommand(plants: Command, io: Io): void {
  const watch = plants
    .command("watch")
    .description(
      "Print every change to the plants as it commits (GET /plants/events), one line each, until interrupted " +
        "(Ctrl-C: exit 0). Reconnects by itself and resumes after the last change printed: none is missed or repeated.",
    )
    .option("--tag <tag>", "only changes to plants with this tag, or that had it until the change")
    .option(
      "--after <position>",
      "start after this position (each line begins with its own): resume where an earlier watch stopped",
      parsePosition,
    );
  addConnectionOptions(watch)
    .option(
      "--json",
      'print each change as one JSON object per line, e.g. {"type":"plant.deleted","position":8,"id":41}',
    )
    .action(async (options: WatchOptions, command: Command) => {
      const client = connect(command, io, options);
      const interrupted = new AbortController();
      let events: AsyncIterable<WatchPlantsEvent>;
      try {
        events = client.watchPlants({
          ...(options.after !== undefined ? { after: options.after } : {}),
          ...(options.tag !== undefined ? { tag: options.tag } : {}),
          signal: interrupted.signal,
          onReconnect: (reconnect) => io.stderr(describeReconnect(reconnect)),
        });
      } catch (error) {
        // The same checks the server makes, failed before sending: the caller's input is at fault.
        if (error instanceof PlantStoreInputError) usageError(command, error.message);
        throw error;
      }
      // Only while watching: every other command keeps the default (the process ends at once).
      const stopListening = io.onInterrupt(() => interrupted.abort());
      try {
        for await (const event of events) {
          io.stdout(options.json === true ? `${stringifyJsonLossless(event)}\n` : describeEvent(event));
          if (event.type === "reset")
            io.stderr(`plantstore: the feed was reset at position ${event.position}: ${event.message}\n`);
        }
      } finally {
        stopListening();
      }
    });
}

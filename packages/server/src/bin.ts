#!/usr/bin/env -S node --max-semi-space-size=8
import { nodeTooOld } from "./node-version.ts";

// The version is checked before the program is imported: an ES module's static imports all load
// before its first line runs, and on an older Node one of them (node:sqlite) fails with an error
// that does not say what to do.
const tooOld = nodeTooOld("plantstore-server", process.versions.node);
if (tooOld === undefined) {
  await import("./cli/program.ts");
} else {
  process.stderr.write(`${tooOld}\n`);
  process.exitCode = 1;
}

#!/usr/bin/env node
import { nodeTooOld } from "./node-version.ts";

// The version is checked before the program is imported: an ES module's static imports all load
// before its first line runs, so an older Node would fail in them, or later, with an error that
// does not say what to do.
const tooOld = nodeTooOld("plantstore", process.versions.node);
if (tooOld === undefined) {
  await import("./main.ts");
} else {
  process.stderr.write(`${tooOld}\n`);
  process.exitCode = 1;
}

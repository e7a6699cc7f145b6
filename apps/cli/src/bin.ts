#!/usr/bin/env node
import { readCliEnv } from "./config.ts";
import { run } from "./program.ts";

// exitCode rather than process.exit(): pending writes to a piped stdout still get flushed.
process.exitCode = await run(process.argv.slice(2), {
  env: readCliEnv(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

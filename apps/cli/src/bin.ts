#!/usr/bin/env node
import { readCliEnv } from "./config.ts";
import { run } from "./program.ts";

// exitCode rather than process.exit(): pending writes to a piped stdout still get flushed.
process.exitCode = await run(process.argv.slice(2), {
  env: readCliEnv(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  onInterrupt(listener) {
    const signals = ["SIGINT", "SIGTERM"] as const;
    const once = () => {
      for (const signal of signals) process.off(signal, once);
      listener();
    };
    for (const signal of signals) process.on(signal, once);
    return () => {
      for (const signal of signals) process.off(signal, once);
    };
  },
});

import { readCliEnv } from "./config.ts";
import { run } from "./program.ts";

// plantstore as a process: the program on process.argv, the environment and the standard streams;
// imported by bin.ts once the Node version is known to be supported.

// A reader that went away (`plantstore plants watch | head -3`) ends the command quietly, as
// SIGPIPE ends other tools; Node ignores SIGPIPE, so the write fails with EPIPE instead.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(0);
});

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

import { Option } from "commander";

import { type Config, envNote, loadConfig, SETTINGS } from "../config.ts";

/** Flags that override the environment's configuration (config.ts) for one command. */
export type ConfigOptions = { port?: string; host?: string; databaseUrl?: string; workers?: string };

export function configFrom(options: ConfigOptions): Config {
  const config = loadConfig();
  return {
    ...config,
    ...(options.port !== undefined ? { port: Number(options.port) } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.databaseUrl !== undefined ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.workers !== undefined ? { workers: Number(options.workers) } : {}),
  };
}

/** `--database-url`, which every command takes; `accepts` says which URLs make sense for it. */
export function databaseUrlOption(accepts: string): Option {
  return new Option("--database-url <url>", `${accepts} (${envNote(SETTINGS.databaseUrl)})`);
}

/** Runs a command's work on something it opened, and closes it whatever happens. */
export async function closingAfter<T extends { close(): Promise<void> }, R>(
  resource: T,
  work: (resource: T) => Promise<R>,
): Promise<R> {
  try {
    return await work(resource);
  } finally {
    await resource.close();
  }
}

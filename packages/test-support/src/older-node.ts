import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";

/** The oldest Node the published packages run on (their `engines.node`). */
export const SUPPORTED_NODE = "22.12";

/**
 * `node` flags that make the process report `version` as its Node version before anything else
 * runs, for a bin's version check where no older Node is installed.
 */
export const fakeNodeVersion = (version: string): string[] => [
  "--import",
  `data:text/javascript,Object.defineProperty(process.versions,"node",{value:${JSON.stringify(version)}})`,
];

const older = (version: string) => {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  const [supportedMajor = 0, supportedMinor = 0] = SUPPORTED_NODE.split(".").map(Number);
  return major < supportedMajor || (major === supportedMajor && minor < supportedMinor);
};

/**
 * A real Node older than SUPPORTED_NODE on this machine, or undefined: the system's `/usr/bin/node`
 * where it is one (the CI image has Node 20 there), or another `node` on PATH.
 */
export function findOlderNode(): { path: string; version: string } | undefined {
  const candidates = [
    "/usr/bin/node",
    "/usr/local/bin/node",
    ...(process.env["PATH"] ?? "").split(delimiter).map((dir) => join(dir, "node")),
  ];
  for (const path of new Set(candidates)) {
    if (!existsSync(path)) continue;
    try {
      const version = execFileSync(path, ["-p", "process.versions.node"], { encoding: "utf8" }).trim();
      if (older(version)) return { path, version };
    } catch {
      // Not a Node we can run: look further.
    }
  }
  return undefined;
}

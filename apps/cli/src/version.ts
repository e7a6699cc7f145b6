import { readFileSync } from "node:fs";

/** Read at run time: package.json sits beside both src/ and dist/, outside tsc's rootDir. */
export function packageVersion(): string {
  const text = readFileSync(new URL("../package.json", import.meta.url), "utf8");
  return (JSON.parse(text) as { version: string }).version;
}

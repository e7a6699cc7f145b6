/**
 * The oldest Node this package runs on, as its package.json's `engines.node` says (a test keeps
 * the two equal). Kept free of imports: the bin checks it on Node versions that lack what the
 * rest of the package imports.
 */
export const SUPPORTED_NODE = "22.12";

/** Why `version` cannot run `command`, in one line, or undefined when it can. */
export function nodeTooOld(command: string, version: string): string | undefined {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  const [supportedMajor = 0, supportedMinor = 0] = SUPPORTED_NODE.split(".").map(Number);
  if (major > supportedMajor || (major === supportedMajor && minor >= supportedMinor)) return undefined;
  return `${command} needs Node ≥ ${SUPPORTED_NODE}, found ${version}`;
}

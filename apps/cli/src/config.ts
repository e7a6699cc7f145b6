/**
 * The only module that reads the environment. Empty values count as unset, so
 * `PLANTSTORE_TOKEN= plantstore …` does not send an empty bearer token.
 */
export type CliEnv = {
  /** `PLANTSTORE_URL`: the service's base URL. */
  url: string | undefined;
  /** `PLANTSTORE_TOKEN`: the bearer token. */
  token: string | undefined;
};

const nonEmpty = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value);

export function readCliEnv(env: Readonly<Record<string, string | undefined>> = process.env): CliEnv {
  return { url: nonEmpty(env["PLANTSTORE_URL"]), token: nonEmpty(env["PLANTSTORE_TOKEN"]) };
}

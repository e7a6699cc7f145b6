import { execFileSync } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";

export type AuthSetup = { env: Record<string, string>; token: string };

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/**
 * What a copy of our server needs to authenticate something other than a PLANTSTORE_TOKENS
 * token, and the bearer token the load sends: an issued `ps_` token (made with the server's own
 * `tokens create` in its fresh database), or an HS256 JWT signed here with a random secret.
 */
export function authSetup(kind: "opaque" | "jwt", serverBin: string, env: Record<string, string>): AuthSetup {
  if (kind === "opaque") {
    const output = execFileSync(
      process.execPath,
      [serverBin, "tokens", "create", "--name", "bench", "--scopes", "plants:write", "--json"],
      {
        env: { ...process.env, ...env },
        encoding: "utf8",
      },
    );
    return { env: {}, token: (JSON.parse(output) as { token: string }).token };
  }
  const secret = randomBytes(32).toString("base64url");
  const claims = {
    iss: "https://bench.invalid/",
    aud: "plantstore",
    sub: "bench",
    scope: "plants:write",
    exp: Math.floor(Date.now() / 1000) + 86_400,
  };
  const signingInput = `${b64url({ alg: "HS256", typ: "JWT" })}.${b64url(claims)}`;
  const signature = createHmac("sha256", secret).update(signingInput).digest("base64url");
  return {
    env: { PLANTSTORE_JWT_SECRET: secret, PLANTSTORE_JWT_ISSUER: claims.iss, PLANTSTORE_JWT_AUDIENCE: claims.aud },
    token: `${signingInput}.${signature}`,
  };
}

import { createHash } from "node:crypto";

import type { TestDatabase } from "./test-database.ts";

type Plant = { id: bigint; name: string; tag?: string | null };

/** The plant's exact JSON, as `GET /plants/{id}` answers it: what its ETag is computed over. */
const representation = ({ id, name, tag }: Plant): string =>
  `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined || tag === null ? "" : `,"tag":${JSON.stringify(tag)}`}}`;

const quoted = (digest: Buffer): string => `"${digest.toString("base64url").slice(0, 27)}"`;

/** The store's ETag secret, read straight from its database (`store_secrets`), as an export would read it. */
async function etagSecret(database: Pick<TestDatabase, "rows">): Promise<Buffer> {
  const rows = await database.rows<{ secret: Uint8Array }>({
    sqlite: "SELECT secret FROM store_secrets WHERE name = 'etag'",
    postgres: "SELECT secret FROM store_secrets WHERE name = 'etag'",
  });
  if (rows.length !== 1) throw new Error(`expected one ETag secret in store_secrets, found ${rows.length}`);
  return Buffer.from(rows[0]!.secret);
}

/**
 * The ETag the server must answer for `plant` on this database: a SHA-256 of the secret the
 * database keeps (as 64 hex digits) followed by the plant's exact JSON, computed here rather than by the server's own code, so a
 * change of the scheme (which would invalidate every tag clients hold) fails a test.
 */
export async function expectedETag(database: Pick<TestDatabase, "rows">, plant: Plant): Promise<string> {
  return quoted(
    createHash("sha256")
      .update((await etagSecret(database)).toString("hex") + representation(plant))
      .digest(),
  );
}

/** The tag anyone could compute from guessed content: a plain SHA-256 of the same JSON, which the ETag must not be. */
export function unkeyedETag(plant: Plant): string {
  return quoted(createHash("sha256").update(representation(plant)).digest());
}

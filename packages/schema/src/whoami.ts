import { z } from "zod";

/**
 * The body of `GET /whoami`: which credential made the request and what it may do. Never the
 * secret itself. `expiresAt` is null for a token that does not expire.
 */
export const WhoAmI = z
  .object({
    kind: z.enum(["static", "opaque", "jwt"]).meta({
      description:
        "`opaque`: an API token issued by `plantstore-server tokens create`; `jwt`: a bearer JWT from the configured identity provider; `static`: a development token from `PLANTSTORE_TOKENS`.",
    }),
    id: z.string().meta({ description: "The token's public id (`tokens list`), the JWT's `sub`, or `static-<n>`." }),
    name: z
      .string()
      .optional()
      .meta({ description: "The label given at `tokens create`, or the JWT's `client_id`/`azp`." }),
    scopes: z.array(z.string()).meta({ description: "Scopes granted, e.g. `plants:read`, `plants:write`." }),
    expiresAt: z.iso
      .datetime()
      .nullable()
      .meta({ description: "When the credential stops working (RFC 3339), or null." }),
  })
  .meta({
    examples: [
      {
        kind: "opaque",
        id: "3f9c2a7e1b6d4058",
        name: "inventory-sync",
        scopes: ["plants:read", "plants:write"],
        expiresAt: "2027-01-01T00:00:00.000Z",
      },
    ],
  });
export type WhoAmI = z.infer<typeof WhoAmI>;

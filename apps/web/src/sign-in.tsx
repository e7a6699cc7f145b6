import type { PlantStoreClient } from "@plantstore/client";
import { type FormEvent, useState } from "react";

import { ErrorAlert } from "./error-alert.tsx";

type Props = {
  connect: (token: string) => PlantStoreClient;
  onSignedIn: (token: string, client: PlantStoreClient) => void;
};

/** Checks the token with `GET /whoami` before keeping it, so a wrong one is refused here. */
export function SignIn({ connect, onSignedIn }: Props) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    let client: PlantStoreClient;
    try {
      client = connect(token.trim());
    } catch {
      // The TypeError names the rule, never the token; say it in the person's terms.
      setError(new Error("That is not a bearer token: it has characters a token cannot have, or is empty."));
      return;
    }
    setBusy(true);
    try {
      await client.whoAmI();
      onSignedIn(token.trim(), client);
    } catch (thrown) {
      setError(thrown);
      setBusy(false);
    }
  };

  return (
    <main className="sign-in">
      <h1>Plant Store</h1>
      <form onSubmit={(event) => void submit(event)}>
        <label htmlFor="token">Token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={token}
          onChange={(event) => setToken(event.target.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorAlert error={error} />
      </form>
    </main>
  );
}

import type { PlantStoreClient } from "@plantstore/client";
import { useCallback, useState } from "react";

import { PlantsScreen } from "./plants-screen.tsx";
import { connect, forgetToken, keepToken, storedToken } from "./session.ts";
import { SignIn } from "./sign-in.tsx";
import type { FeedState } from "./use-live-feed.ts";

export function App() {
  const [feedState, setFeedState] = useState<FeedState>({ kind: "connecting" });
  const [client, setClient] = useState<PlantStoreClient | undefined>(() => {
    const token = storedToken();
    if (token === undefined) return undefined;
    try {
      return connect(token);
    } catch {
      // A stored token that cannot be sent (edited by hand): sign in again.
      forgetToken();
      return undefined;
    }
  });

  const signedIn = useCallback((token: string, signedInClient: PlantStoreClient) => {
    keepToken(token);
    setFeedState({ kind: "connecting" });
    setClient(signedInClient);
  }, []);
  const signOut = useCallback(() => {
    forgetToken();
    setClient(undefined);
  }, []);

  return client === undefined ? (
    <SignIn connect={connect} onSignedIn={signedIn} />
  ) : (
    <PlantsScreen client={client} feedState={feedState} setFeedState={setFeedState} onSignOut={signOut} />
  );
}

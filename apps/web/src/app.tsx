import type { PlantStoreClient } from "@plantstore/client";
import { useCallback, useMemo, useState } from "react";

import { PlantsScreen } from "./plants-screen.tsx";
import { connect, forgetToken, keepToken, storedToken } from "./session.ts";
import { SignIn } from "./sign-in.tsx";
import type { FeedState } from "./use-live-feed.ts";

/** A signed-in session: the client, and the feed state the client's fetch reports into. */
type Session = { client: PlantStoreClient; feed: { opened: () => void } };

function open(token: string, feed: { opened: () => void }): PlantStoreClient | undefined {
  try {
    return connect(token, () => feed.opened());
  } catch {
    // A stored token that cannot be sent (edited by hand): sign in again.
    forgetToken();
    return undefined;
  }
}

export function App() {
  const [feedState, setFeedState] = useState<FeedState>({ kind: "connecting" });
  const feed = useMemo(() => ({ opened: () => setFeedState({ kind: "live" }) }), []);
  const [session, setSession] = useState<Session | undefined>(() => {
    const token = storedToken();
    const client = token === undefined ? undefined : open(token, feed);
    return client === undefined ? undefined : { client, feed };
  });

  const signedIn = useCallback(
    (token: string, client: PlantStoreClient) => {
      keepToken(token);
      setFeedState({ kind: "connecting" });
      setSession({ client, feed });
    },
    [feed],
  );
  const signOut = useCallback(() => {
    forgetToken();
    setSession(undefined);
  }, []);

  return session === undefined ? (
    <SignIn connect={(token) => connect(token, () => feed.opened())} onSignedIn={signedIn} />
  ) : (
    <PlantsScreen client={session.client} feedState={feedState} setFeedState={setFeedState} onSignOut={signOut} />
  );
}

import type { NewPlant, PlantStoreClient, StreamOpen, WatchPlantsEvent } from "@plantstore/client";
import { type FormEvent, useCallback, useRef, useState } from "react";

import { CreatePlantForm } from "./create-plant-form.tsx";
import { ErrorAlert } from "./error-alert.tsx";
import { PlantEditor, type PlantNews } from "./plant-editor.tsx";
import { PlantTable } from "./plant-table.tsx";
import { type FeedState, useLiveFeed } from "./use-live-feed.ts";
import { usePlantPage } from "./use-plant-page.ts";

const PAGE_SIZES = [10, 25, 100] as const;

function FeedStatus({ state }: { state: FeedState }) {
  const text =
    state.kind === "live"
      ? "Live"
      : state.kind === "connecting"
        ? "Connecting…"
        : state.kind === "reconnecting"
          ? `Reconnecting… (attempt ${state.attempt})`
          : "Live updates stopped";
  return (
    <>
      <p role="status" className={`feed feed-${state.kind}`} aria-label="Live updates">
        {text}
      </p>
      {state.kind === "stopped" ? <ErrorAlert error={state.error} /> : null}
    </>
  );
}

type Props = {
  client: PlantStoreClient;
  feedState: FeedState;
  setFeedState: (state: FeedState) => void;
  onSignOut: () => void;
};

export function PlantsScreen({ client, feedState, setFeedState, onSignOut }: Props) {
  const page = usePlantPage(client, 100);
  // The open plant is the editor's own, from the row it was opened from: what happens to the
  // listing afterwards (a deletion, a filter it leaves, another page) never closes it.
  const [opened, setOpened] = useState<NewPlant | undefined>(undefined);
  const [news, setNews] = useState<PlantNews | undefined>(undefined);
  const openedId = useRef<bigint | undefined>(undefined);
  openedId.current = opened?.id;
  const [filter, setFilter] = useState("");

  const { apply, reload } = page;
  const onEvent = useCallback(
    (event: WatchPlantsEvent) => {
      apply(event);
      const id = openedId.current;
      if (id === undefined) return;
      if (event.type === "reset") setNews({ kind: "unknown" });
      else if (event.type === "plant.deleted") {
        if (event.id === id) setNews({ kind: "deleted" });
      } else if (event.plant.id === id) setNews({ kind: "changed", plant: event.plant });
    },
    [apply],
  );
  // A stream with no position to resume from starts with the changes committed after it opened:
  // what was read before (the list, the open plant) may miss one made in between.
  const onOpen = useCallback(
    (open: StreamOpen) => {
      if (open.start !== "fresh") return;
      reload();
      if (openedId.current !== undefined) setNews({ kind: "unknown" });
    },
    [reload],
  );
  useLiveFeed(client, onEvent, onOpen, setFeedState);

  const applyFilter = (event: FormEvent) => {
    event.preventDefault();
    const tag = filter.trim();
    page.setTag(tag === "" ? undefined : tag);
  };
  const openPlant = (plant: NewPlant) => {
    setNews(undefined);
    setOpened(plant);
  };

  return (
    <>
      <header className="top">
        <h1>Plant Store</h1>
        <FeedStatus state={feedState} />
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main className="plants">
        <CreatePlantForm client={client} onCreated={page.put} />
        <section aria-labelledby="list-heading">
          <h2 id="list-heading">Plants</h2>
          <form className="filter" role="search" aria-label="Filter plants" onSubmit={applyFilter}>
            <label htmlFor="filter-tag">Filter by tag</label>
            <input id="filter-tag" value={filter} onChange={(event) => setFilter(event.target.value)} />
            <button type="submit">Filter</button>
            <label htmlFor="page-size">Rows per page</label>
            <select id="page-size" value={page.limit} onChange={(event) => page.setLimit(Number(event.target.value))}>
              {PAGE_SIZES.map((size) => (
                <option key={size} value={size}>
                  {size}
                </option>
              ))}
            </select>
          </form>
          <ErrorAlert error={page.error} />
          <PlantTable plants={page.plants} onOpen={openPlant} />
          {!page.loading && page.plants.length === 0 ? <p>No plants on this page.</p> : null}
          <nav aria-label="Pages" className="pages">
            <button type="button" disabled={!page.hasPrevious} onClick={page.previousPage}>
              Previous page
            </button>
            <button type="button" disabled={!page.hasNext} onClick={page.nextPage}>
              Next page
            </button>
          </nav>
        </section>
        {opened === undefined ? null : (
          <PlantEditor
            key={opened.id.toString()}
            client={client}
            plant={opened}
            news={news}
            filterTag={page.tag}
            onSaved={page.put}
            onDeleted={(id) => {
              page.remove(id);
              setOpened(undefined);
            }}
            onClose={() => setOpened(undefined)}
          />
        )}
      </main>
    </>
  );
}

import type { ListPlantsQuery, NewPlant, PlantStoreClient, WatchPlantsEvent } from "@plantstore/client";
import { useCallback, useEffect, useRef, useState } from "react";

/** Which page is shown: the `after` cursors come from the `Link` header's next link, never offsets. */
type PageQuery = { tag: string | undefined; limit: number; after: bigint | undefined };

type Page = { plants: NewPlant[]; next: ListPlantsQuery | undefined };

const byId = (a: NewPlant, b: NewPlant) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Whether a plant with this id belongs between this page's cursor and the next page's. */
function onPage(page: Page, query: PageQuery, id: bigint): boolean {
  if (query.after !== undefined && id <= query.after) return false;
  if (page.next === undefined) return true;
  const last = page.plants.at(-1);
  return last !== undefined && id <= last.id;
}

/** The page after a change made here or elsewhere: the plant in place, gone, or moved out of the filter. */
function withPlant(page: Page, query: PageQuery, plant: NewPlant): Page {
  const others = page.plants.filter((p) => p.id !== plant.id);
  const shown = (query.tag === undefined || plant.tag === query.tag) && onPage(page, query, plant.id);
  return { ...page, plants: shown ? [...others, plant].sort(byId) : others };
}

function without(page: Page, id: bigint): Page {
  return { ...page, plants: page.plants.filter((p) => p.id !== id) };
}

export type PlantPageView = {
  plants: readonly NewPlant[];
  loading: boolean;
  error: unknown;
  tag: string | undefined;
  limit: number;
  hasNext: boolean;
  hasPrevious: boolean;
  setTag: (tag: string | undefined) => void;
  setLimit: (limit: number) => void;
  nextPage: () => void;
  previousPage: () => void;
  reload: () => void;
  /** A plant as it now is (created or saved here, or an event): shown in place when it belongs on this page. */
  put: (plant: NewPlant) => void;
  remove: (id: bigint) => void;
  apply: (event: WatchPlantsEvent) => void;
};

/** One page of `GET /plants` at a time, kept current by the caller's put/remove/apply. */
export function usePlantPage(client: PlantStoreClient, initialLimit: number): PlantPageView {
  const [query, setQuery] = useState<PageQuery>({ tag: undefined, limit: initialLimit, after: undefined });
  const [previous, setPrevious] = useState<Array<bigint | undefined>>([]);
  const [page, setPage] = useState<Page>({ plants: [], next: undefined });
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>(undefined);
  const [generation, setGeneration] = useState(0);
  const queryRef = useRef(query);
  queryRef.current = query;
  /**
   * Changes seen while a listing is under way: its answer may predate them, so they are applied
   * again on top of it, in order (each is the plant's latest state, so applying twice is harmless).
   */
  const sinceListing = useRef<Array<(page: Page) => Page> | undefined>(undefined);
  const change = useCallback((edit: (page: Page) => Page) => {
    sinceListing.current?.push(edit);
    setPage(edit);
  }, []);

  useEffect(() => {
    const stop = new AbortController();
    setLoading(true);
    const seen: Array<(page: Page) => Page> = [];
    sinceListing.current = seen;
    const { tag, limit, after } = query;
    client
      .listPlants(
        { limit, ...(tag === undefined ? {} : { tag }), ...(after === undefined ? {} : { after }) },
        {
          signal: stop.signal,
        },
      )
      .then(
        (answer) => {
          if (sinceListing.current === seen) sinceListing.current = undefined;
          setPage(seen.reduce((page, edit) => edit(page), { plants: answer.plants, next: answer.next }));
          setError(undefined);
          setLoading(false);
        },
        (thrown: unknown) => {
          if (stop.signal.aborted) return;
          setError(thrown);
          setLoading(false);
        },
      );
    return () => stop.abort();
  }, [client, query, generation]);

  const put = useCallback((plant: NewPlant) => change((p) => withPlant(p, queryRef.current, plant)), [change]);
  const remove = useCallback((id: bigint) => change((p) => without(p, id)), [change]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);

  return {
    plants: page.plants,
    loading,
    error,
    tag: query.tag,
    limit: query.limit,
    hasNext: page.next !== undefined,
    hasPrevious: previous.length > 0,
    setTag: (tag) => {
      setPrevious([]);
      setQuery((q) => ({ ...q, tag, after: undefined }));
    },
    setLimit: (limit) => {
      setPrevious([]);
      setQuery((q) => ({ ...q, limit, after: undefined }));
    },
    nextPage: () => {
      const after = page.next?.after;
      if (after === undefined) return;
      setPrevious((stack) => [...stack, query.after]);
      setQuery((q) => ({ ...q, after }));
    },
    previousPage: () => {
      if (previous.length === 0) return;
      setPrevious((stack) => stack.slice(0, -1));
      setQuery((q) => ({ ...q, after: previous.at(-1) }));
    },
    reload,
    put,
    remove,
    apply: useCallback(
      (event: WatchPlantsEvent) => {
        switch (event.type) {
          case "plant.created":
          case "plant.updated":
            return put(event.plant);
          case "plant.deleted":
            return remove(event.id);
          case "reset":
            // Changes may have been missed: the page is read again, and the feed goes on after the reset.
            return reload();
        }
      },
      [put, remove, reload],
    ),
  };
}

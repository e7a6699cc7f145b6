import { decodePageCursor, encodePageCursor, ErrorCodes } from "@plantstore/schema";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, TEST_BACKEND, type TestServer, TOKEN } from "../support/harness.ts";
import { edgeBiasedInt64 } from "../support/int64-arbitrary.ts";

/**
 * A stateful property test (fast-check `commands` + `asyncModelRun`): random sequences of
 * creations (new, replayed, conflicting), deletions and list pages (GET and HEAD, any limit, tag
 * filter and `after`, then the `Link` cursors) against the real server, each answer checked
 * against a small model of what the server must hold. Ids are bigints throughout, never numbers.
 * A failure prints the seed, the path and the shrunk commands; replay it with
 * `fc.assert(..., { seed, path, endOnFailure: true })`.
 */

type Stored = { name: string; tag: string | undefined };
/** What the server must hold, by exact id. */
type Model = Map<bigint, Stored>;
type PlantCommand = fc.AsyncCommand<Model, TestServer>;

let server: TestServer;
/** Ids a creation was sent for since the store was last emptied: what the next run deletes first. */
const touched = new Set<bigint>();
/** How often each outcome came up, so that a run which never met one fails rather than passes emptily. */
const outcomes = new Map<string, number>();
const tally = (outcome: string) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
const sortedIds = (model: Model) => [...model.keys()].sort(byId);

/** The JSON text the server writes for a plant: members in this order, no `tag` when it has none. */
function plantText(id: bigint | undefined, { name, tag }: Stored): string {
  const members = [`"name":${JSON.stringify(name)}`];
  if (id !== undefined) members.unshift(`"id":${id}`);
  if (tag !== undefined) members.push(`"tag":${JSON.stringify(tag)}`);
  return `{${members.join(",")}}`;
}

const deletePlant = (id: bigint) =>
  server.send({ method: "DELETE", path: `/plants/${id}`, contractPath: "/plants/{id}", headers: auth });

/** Each run starts from an empty store, checked below our own code (the database's row count). */
async function emptyStore(): Promise<{ model: Model; real: TestServer }> {
  const answers = await Promise.all([...touched].map(deletePlant));
  for (const { status } of answers) expect([204, 404]).toContain(status);
  touched.clear();
  expect(await server.database.count()).toBe(0);
  return { model: new Map(), real: server };
}

async function expectCreate(model: Model, id: bigint, plant: Stored): Promise<void> {
  touched.add(id);
  const response = await server.createRaw(plantText(id, plant));
  const stored = model.get(id);
  if (stored !== undefined && (stored.name !== plant.name || stored.tag !== plant.tag)) {
    expectErrorShape(response, 409, ErrorCodes.ID_CONFLICT.error);
    tally("conflict");
    return;
  }
  expect([response.status, response.text]).toEqual([200, plantText(undefined, plant)]);
  tally(stored === undefined ? "created" : "replayed");
  model.set(id, plant);
}

async function expectDelete(model: Model, id: bigint): Promise<void> {
  const response = await deletePlant(id);
  if (model.delete(id)) {
    expect([response.status, response.text]).toEqual([204, ""]);
    tally("deleted");
  } else {
    expectErrorShape(response, 404, ErrorCodes.PLANT_NOT_FOUND.error);
    tally("not found");
  }
}

function plantCommand(
  describe: () => string,
  run: (model: Model) => Promise<void>,
  check: (model: Readonly<Model>) => boolean = () => true,
): PlantCommand {
  return { check, run, toString: describe };
}

/** A new plant, or another one under an id already taken (a replay or a conflict, as it happens). */
const create = (id: bigint, plant: Stored) =>
  plantCommand(
    () => `create ${plantText(id, plant)}`,
    (model) => expectCreate(model, id, plant),
  );

/**
 * Several plants at once, sent together (so they commit in one group): runs reach pages worth
 * following sooner. Their ids differ, so the order the answers come in changes nothing.
 */
const createTogether = (plants: Array<[bigint, Stored]>) =>
  plantCommand(
    () => `create together ${plants.map(([id, plant]) => plantText(id, plant)).join(" ")}`,
    async (model) => {
      await Promise.all(plants.map(([id, plant]) => expectCreate(model, id, plant)));
    },
  );

/** Any id, stored or (most often) not. */
const deleteAny = (id: bigint) =>
  plantCommand(
    () => `delete ${id}`,
    (model) => expectDelete(model, id),
  );

/** A command on the `n`th stored plant (modulo their number) in id order; its report names the id. */
function onStored(n: number, what: string, act: (model: Model, id: bigint, stored: Stored) => Promise<void>) {
  let chosen: bigint | undefined;
  return plantCommand(
    () => `${what} #${n}${chosen === undefined ? "" : ` (id ${chosen})`}`,
    (model) => {
      const ids = sortedIds(model);
      const id = ids[n % ids.length]!;
      chosen = id;
      return act(model, id, model.get(id)!);
    },
    (model) => model.size > 0,
  );
}

/** The very body that created a stored plant, again: 200 and the same answer. */
const replay = (n: number) => onStored(n, "replay", (model, id, stored) => expectCreate(model, id, stored));

/** A stored plant's id with another name, or another tag: 409. */
const conflict = (n: number, differs: "name" | "tag") =>
  onStored(n, `conflict by ${differs}`, (model, id, stored) =>
    expectCreate(
      model,
      id,
      differs === "name"
        ? { ...stored, name: `${stored.name} too` }
        : { ...stored, tag: stored.tag === undefined ? "a" : undefined },
    ),
  );

const deleteStored = (n: number) => onStored(n, "delete", (model, id) => expectDelete(model, id));

type ListQuery = {
  method: "GET" | "HEAD";
  limit: number;
  tag: string | undefined;
  after: { id: bigint; spelled: "decimal" | "cursor" } | undefined;
};

/** How many pages one list command follows through `Link` (so a walk stays a few requests). */
const MAX_PAGES = 3;

/** A page, then up to MAX_PAGES - 1 more by following its `Link`: each exactly what the model says. */
async function expectPages(model: Model, { method, limit, tag, after }: ListQuery): Promise<void> {
  const params = new URLSearchParams({ limit: String(limit) });
  if (after !== undefined)
    params.set("after", after.spelled === "cursor" ? encodePageCursor(after.id) : String(after.id));
  if (tag !== undefined) params.set("tag", tag);
  let target: string | undefined = `/plants?${params}`;
  let from = after?.id;
  const matching = sortedIds(model).filter((id) => tag === undefined || model.get(id)!.tag === tag);
  for (let pages = 0; target !== undefined && pages < MAX_PAGES; pages++) {
    const response = await server.send({ method, path: target, headers: auth });
    const rest = matching.filter((id) => from === undefined || id > from);
    const page = rest.slice(0, limit);
    const text = `[${page.map((id) => plantText(id, model.get(id)!)).join(",")}]`;
    expect([response.status, response.text]).toEqual([200, method === "HEAD" ? "" : text]);
    tally(`${method} ${pages === 0 ? "first page" : "page by Link"}`);
    const link = response.headers["link"] as string | undefined;
    if (rest.length <= limit) {
      expect(link).toBeUndefined();
      return;
    }
    // The next page's query: the same limit and tag, after the last plant of this one.
    const next = /^<(\/plants\?[^>]*)>; rel="next"$/.exec(link ?? "")?.[1];
    expect(next, `Link: ${link}`).toBeDefined();
    const nextParams = new URL(next!, server.url).searchParams;
    expect([nextParams.get("limit"), nextParams.get("tag") ?? undefined]).toEqual([String(limit), tag]);
    from = page.at(-1)!;
    expect(decodePageCursor(nextParams.get("after") ?? "")).toBe(from);
    target = next;
  }
}

const list = (query: ListQuery) =>
  plantCommand(
    () => {
      const { method, limit, tag, after } = query;
      const afterText = after === undefined ? "" : ` after ${after.id} (${after.spelled})`;
      return `${method} limit ${limit}${tag === undefined ? "" : ` tag ${tag}`}${afterText}`;
    },
    (model) => expectPages(model, query),
  );

// Few names and tags, so that creations under a taken id are often replays, not only conflicts.
const plant: fc.Arbitrary<Stored> = fc.record({
  name: fc.constantFrom("fern", "moss", "ivy 🌿"),
  tag: fc.option(fc.constantFrom("a", "b"), { nil: undefined }),
});
const tagFilter = fc.option(fc.constantFrom("a", "b"), { nil: undefined });
const nth = fc.nat({ max: 1_000 });

const command: fc.Arbitrary<PlantCommand> = fc.oneof(
  { arbitrary: fc.tuple(edgeBiasedInt64, plant).map(([id, p]) => create(id, p)), weight: 4 },
  {
    arbitrary: fc
      .uniqueArray(fc.tuple(edgeBiasedInt64, plant), { minLength: 2, maxLength: 8, selector: ([id]) => id })
      .map(createTogether),
    weight: 2,
  },
  { arbitrary: nth.map((n) => replay(n)), weight: 1 },
  {
    arbitrary: fc.tuple(nth, fc.constantFrom("name", "tag")).map(([n, d]) => conflict(n, d)),
    weight: 1,
  },
  { arbitrary: nth.map((n) => deleteStored(n)), weight: 1 },
  { arbitrary: edgeBiasedInt64.map((id) => deleteAny(id)), weight: 1 },
  {
    arbitrary: fc
      .record({
        method: fc.constantFrom("GET", "HEAD"),
        // Small pages, so that runs of a few plants span several of them; now and then the largest.
        limit: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 4 }), weight: 5 }, fc.constantFrom(100, 1_000)),
        tag: tagFilter,
        after: fc.option(
          fc.record({
            id: edgeBiasedInt64,
            spelled: fc.constantFrom("decimal", "cursor"),
          }),
          { nil: undefined, freq: 2 },
        ),
      })
      .map((query) => list(query)),
    weight: 4,
  },
);

describe(`the plants API against a model of what it holds (${TEST_BACKEND})`, () => {
  it("answers every sequence of creations, replays, conflicts, deletions and list pages as the model says", async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands([command], { maxCommands: 15, size: "medium" }), (commands) =>
        fc.asyncModelRun(emptyStore, commands),
      ),
      { numRuns: 120 },
    );
    expect([...outcomes.keys()].sort()).toEqual(
      [
        "created",
        "replayed",
        "conflict",
        "deleted",
        "not found",
        "GET first page",
        "GET page by Link",
        "HEAD first page",
        "HEAD page by Link",
      ].sort(),
    );
  }, 60_000);
});

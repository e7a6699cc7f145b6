import { describe, expect, it } from "vitest";
import { z } from "zod";

import { appRouter } from "../router/root.ts";
import { protectedProcedure, router } from "../trpc.ts";
import type { PlainPath } from "./plain-paths.ts";
import { type RouteMatch, RouteTable } from "./routes.ts";

const events: PlainPath = { path: "/plants/events", methods: ["GET"], handler: () => undefined };
const table = new RouteTable(appRouter, [events]);

/** What a match names: the plain path, the operation's template and parameters, or the methods allowed. */
function named(found: RouteMatch | { allow: string[] } | undefined) {
  if (found === undefined || "allow" in found) return found;
  if ("plain" in found) return { plain: found.plain.path };
  return { template: found.route.template, procedure: found.route.procedurePath, params: found.params };
}

describe("RouteTable", () => {
  it("finds an operation by method and exact path, with its parameters", () => {
    expect(named(table.match("POST", "/plants"))).toEqual({
      template: "/plants",
      procedure: "plants.create",
      params: {},
    });
    expect(named(table.match("GET", "/plants/42"))).toEqual({
      template: "/plants/{id}",
      procedure: "plants.get",
      params: { id: "42" },
    });
    expect(named(table.match("PATCH", "/plants/-9223372036854775808"))).toMatchObject({
      params: { id: "-9223372036854775808" },
    });
    // A parameter is passed on as sent: the procedure's schema refuses what is not an id (400).
    expect(named(table.match("DELETE", "/plants/fern"))).toMatchObject({ params: { id: "fern" } });
  });

  it("matches case-sensitively, segment for segment, with no empty parameter", () => {
    expect(table.match("GET", "/Plants/42")).toBeUndefined();
    expect(table.match("GET", "/plants/42/")).toBeUndefined();
    expect(table.match("GET", "/plants/42/leaves")).toBeUndefined();
    expect(table.match("GET", "/plants/")).toBeUndefined();
    expect(table.match("GET", "plants/42")).toBeUndefined();
    expect(table.match("GET", "/")).toBeUndefined();
  });

  it("answers the methods a known path takes, HEAD beside GET, for a method it does not", () => {
    expect(table.match("TRACE", "/plants/42")).toEqual({ allow: ["DELETE", "GET", "HEAD", "PATCH", "PUT"] });
    expect(table.match("PUT", "/plants")).toEqual({ allow: ["GET", "HEAD", "POST"] });
  });

  it("says what OPTIONS answers: a path's methods with OPTIONS, its PATCH's media type; every method for *", () => {
    expect(table.options("/plants/42")).toEqual({
      template: "/plants/{id}",
      allow: ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "PUT"],
      acceptPatch: "application/merge-patch+json",
    });
    expect(table.options("/plants")).toEqual({
      template: "/plants",
      allow: ["GET", "HEAD", "OPTIONS", "POST"],
      acceptPatch: undefined,
    });
    expect(table.options("/plants/events")).toEqual({
      template: "/plants/events",
      allow: ["GET", "HEAD", "OPTIONS"],
      acceptPatch: undefined,
    });
    expect(table.options("/plants/42/leaves")).toBeUndefined();
    expect(table.methods()).toEqual(["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"]);
  });

  it("puts a plain path before the templates: /plants/events is the feed, not a plant", () => {
    expect(named(table.match("GET", "/plants/events"))).toEqual({ plain: "/plants/events" });
    expect(table.match("DELETE", "/plants/events")).toEqual({ allow: ["GET", "HEAD"] });
  });

  it("refuses a template whose parameter is part of a segment, rather than match it wrongly", () => {
    const odd = router({
      leaf: protectedProcedure
        .meta({ openapi: { method: "GET", path: "/plants/{id}.json" }, errors: [] })
        .input(z.object({ id: z.string() }))
        .output(z.null())
        .query(() => null),
    });
    expect(() => new RouteTable(odd, [])).toThrow("a parameter must be a whole segment");
  });
});

import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { nodeTooOld, SUPPORTED_NODE } from "./node-version.ts";

describe("nodeTooOld: the bin's check of the Node it runs on", () => {
  it("refuses every Node older than the supported one, in one line naming both", () => {
    for (const version of ["20.20.2", "18.0.0", "22.11.0", "22.0.0", "21.7.3"])
      expect(nodeTooOld("plantstore-server", version)).toBe(`plantstore-server needs Node ≥ 22.12, found ${version}`);
  });

  it("accepts the supported one and every later one", () => {
    for (const version of ["22.12.0", "22.13.1", "23.0.0", "24.21.0", "30.1.0"])
      expect(nodeTooOld("plantstore-server", version)).toBeUndefined();
  });

  it("is the package's engines.node", () => {
    const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      engines: { node: string };
    };
    expect(manifest.engines.node).toBe(`>=${SUPPORTED_NODE}`);
  });
});

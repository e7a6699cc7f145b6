import { describe, expect, it } from "vitest";

import { logBlockBytes } from "./logger.ts";

describe("the log's block size", () => {
  it("stays within PIPE_BUF when workers share stdout, so no process's block splits another's line", () => {
    const { minLength, maxWrite } = logBlockBytes({ sharedStdout: true });
    expect(maxWrite).toBeLessThanOrEqual(4096);
    expect(minLength).toBeLessThan(maxWrite);
  });

  it("fills a pipe's buffer when the process writes alone, so a busy server hands few writes to the thread pool", () => {
    const { minLength, maxWrite } = logBlockBytes({ sharedStdout: false });
    expect(maxWrite).toBe(64 * 1024);
    // SonicBoom refuses a minLength that is not below maxWrite.
    expect(minLength).toBeLessThan(maxWrite);
    expect(minLength).toBeGreaterThan(32 * 1024);
  });
});

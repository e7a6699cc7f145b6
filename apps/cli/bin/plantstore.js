#!/usr/bin/env node
// The workspace's bin: a file that exists before the build, so `pnpm install` links it without a
// warning. The published manifest points at dist/bin.js instead (publishConfig.bin).
import "../dist/bin.js";

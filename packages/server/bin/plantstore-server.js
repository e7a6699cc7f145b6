#!/usr/bin/env -S node --max-semi-space-size=8
// The workspace's bin: a file that exists before the build, so `pnpm install` links it without a
// warning. The published manifest points at dist/bin.js instead (publishConfig.bin).
import "../dist/bin.js";

import { defineConfig } from "vitest/config";

/**
 * The pure core's tests, in plain Node: they need no binding, so they need no workerd either
 * (starting one costs seconds, running them milliseconds). A project of `vitest.config.ts`, and
 * the config Stryker runs on its own (`stryker.config.mjs`).
 */
export default defineConfig({
  test: {
    name: "core",
    environment: "node",
    include: ["test/core/**/*.test.ts"],
    setupFiles: ["./test/core/fast-check-seed.ts"],
    // Property tests run a hundred cases of real WebCrypto hashing each: under a loaded machine
    // (the integration projects run beside them) one can take several seconds, not a hang.
    testTimeout: 30_000,
  },
});

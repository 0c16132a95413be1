/**
 * Mutation testing of the pure core (`npm run mutation`): every mutant of `src/core` is run against
 * the Node `core` project only (`vitest.core.config.ts`, with a longer test timeout: `test/core/vitest.mutation.config.ts`), since integration tests inside workerd
 * would take hours. Too slow for CI; run it after changing the core and read what survived.
 */
export default {
  testRunner: "vitest",
  vitest: { configFile: "test/core/vitest.mutation.config.ts" },
  mutate: ["src/core/**/*.ts"],
  coverageAnalysis: "perTest",
  // Module-level mutants (zod schemas, constants) need every test re-run in a fresh process each:
  // half the run time for a twelfth of the mutants. They are listed as ignored in the report.
  ignoreStatic: true,
  // Two cores: one mutant per core.
  concurrency: 2,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  incrementalFile: "reports/mutation/incremental.json",
  tempDirName: ".stryker-tmp",
  thresholds: { high: 90, low: 85, break: 85 },
};

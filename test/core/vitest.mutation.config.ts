import { defineConfig, mergeConfig } from "vitest/config";
import core from "../../vitest.core.config";

/**
 * The `core` project as Stryker runs it (`stryker.config.mjs`): a mutation run keeps both cores
 * busy beside whatever else the machine runs, and a property test that takes a second alone then
 * passes vitest's default 5 s; a test that times out would fail the initial run, or count a
 * mutant as killed by load rather than by an assertion. Stryker's own per-mutant timeout still
 * catches a mutant that loops.
 */
export default mergeConfig(core, defineConfig({ test: { testTimeout: 60_000 } }));

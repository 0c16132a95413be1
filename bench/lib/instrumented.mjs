// The Worker every bench section runs: the product behind the benchmark's instruments
// (bench/worker/index.ts: the usage ledger, the D1 meter and the D1 simulation, each off unless its
// var is on). Production deploys wrangler.toml's own entry, src/index.ts, which has none of them.
export const INSTRUMENTED_MAIN = "bench/worker/index.ts";

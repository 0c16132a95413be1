import fc from "fast-check";

/**
 * The seed the core's property tests draw their cases from. Left unset, each run draws a new one
 * (a local run explores); CI sets `FC_SEED` (.ci/run), so a build passes or fails on the code, not
 * on the draw. A failure prints its seed and path; `FC_SEED=<seed> npx vitest run --project core`
 * replays it, and the case it found becomes a fixed example beside its property.
 */
const seed = process.env["FC_SEED"];
if (seed !== undefined && seed !== "") {
  if (!/^-?\d+$/.test(seed)) throw new Error(`FC_SEED must be an integer, not ${JSON.stringify(seed)}`);
  fc.configureGlobal({ seed: Number(seed) });
}

// §6: how long a compaction takes from plan to settled boundary, and how large the agent's active
// context grows while one is in flight, on the bulk replay; §7 adds the same at a conversational
// pace (`pacedLag`, from its own conversation).
import { fmt } from "../lib/scenario.mjs";
import { latencySummary, max, roundSummary } from "../lib/stats.mjs";

/** Lags (planned → completed, by the events' recordedAt) of every settled run. @param {import("../lib/api.mjs").LogFollower} follower */
function runLags(follower) {
  return follower
    .plannedRuns()
    .filter((r) => r.completed !== undefined)
    .map((r) => r.completed.recordedAt - r.planned.recordedAt);
}

/**
 * Whether a run of `follower` was planned and not yet settled at time `t` (ms).
 * @param {import("../lib/api.mjs").LogFollower} follower
 */
export function inFlightAt(follower) {
  const runs = follower.plannedRuns();
  return (/** @type {number} */ t) => runs.some((r) => r.planned.recordedAt <= t && (r.completed === undefined || t < r.completed.recordedAt));
}

/**
 * @param {{ log: (line: string) => void, history: import("./histories.mjs").Histories } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export function measureCompactionLag({ log, followers, history }) {
  const follower = followers.big;
  const { bigSamples } = history;
  const lags = runLags(follower);
  const inFlight = follower.preflights.filter((p) => p.reason === "compaction_in_flight").map((p) => p.activeChars);
  const allActive = follower.preflights.map((p) => p.activeChars);
  // Context samples taken during the replay, classified by whether a run was open at the time
  // (planned recordedAt ≤ sample time < completed recordedAt).
  const openAt = inFlightAt(follower);
  const inFlightSamples = bigSamples.filter((s) => openAt(s.at));
  const metric = {
    replay: {
      conversation: "2M replay, bulk ingest",
      runs: lags.length,
      lagMs: roundSummary(latencySummary(lags)),
      maxActiveCharsWhileInFlight: max(inFlight),
      maxActiveCharsOverall: max(allActive),
      preflightsWhileInFlight: inFlight.length,
      contextSamples: bigSamples.length,
      contextSamplesWhileInFlight: inFlightSamples.length,
      maxServedCharsWhileInFlight: max(inFlightSamples.map((s) => s.totalsChars)),
      maxOmittedCharsWhileInFlight: max(inFlightSamples.map((s) => s.omittedChars)),
      samplesWithOmittedGroups: bigSamples.filter((s) => s.omittedGroups > 0).length,
      agentMaxChars: 120_000,
    },
  };
  log(`[6 compaction lag] replay: p50 ${metric.replay.lagMs.p50} ms, max ${metric.replay.lagMs.max} ms; largest active context while in flight ${fmt(max(inFlight))} chars`);
  return metric;
}

/**
 * The lag row of a conversation fed one group, then one context call, at a time (§7's).
 * @param {import("../lib/api.mjs").LogFollower} follower @param {{ at: number, totalsChars: number }[]} samples its context calls
 */
export function pacedLag(follower, samples) {
  const lags = runLags(follower);
  const openAt = inFlightAt(follower);
  const inFlight = follower.preflights.filter((p) => p.reason === "compaction_in_flight").map((p) => p.activeChars);
  return {
    conversation: "one group, then one context call, at a time (prefix-stability conversation)",
    runs: lags.length,
    lagMs: roundSummary(latencySummary(lags)),
    maxActiveCharsWhileInFlight: max(inFlight),
    preflightsWhileInFlight: inFlight.length,
    maxServedCharsWhileInFlight: max(samples.filter((s) => openAt(s.at)).map((s) => s.totalsChars)),
    maxServedCharsOverall: max(samples.map((s) => s.totalsChars)),
  };
}

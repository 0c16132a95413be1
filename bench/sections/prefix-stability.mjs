// §7: does each context response extend the previous one (what a provider's prompt cache keyed on
// the previous request could serve)? One group, then one `GET …/context`, at a time; the same
// conversation gives §6 its lag at a conversational pace and §4 its compactor input at that pace.
import { extractorPrefixShare, prefixReuse } from "../lib/prefix-reuse.mjs";
import { userChars } from "../lib/conversation.mjs";
import { waitForCatchUp } from "../lib/api.mjs";
import { DEFAULT_POLICY } from "../lib/scenario.mjs";
import { latencySummary, max, mean, round, roundSummary } from "../lib/stats.mjs";
import { inFlightAt, pacedLag } from "./compaction-lag.mjs";
import { modelEdge, roundedShare } from "./compactor-input.mjs";

const sum = (/** @type {number[]} */ v) => v.reduce((x, y) => x + y, 0);

/**
 * @param {{ api: import("../lib/api.mjs").Api, fake: { calls: any[] }, size: Record<string, number>, log: (line: string) => void } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measurePrefixStability({ api, fake, size, log, agents, ledgers, streams, followers }) {
  const a = agents.prefix;
  const follower = followers.prefix;
  log(`[7 prefix stability] ${size.prefixGroups} groups, one GET …/context after each`);
  /** @type {{ role: string, content: string }[] | null} */
  let previous = null;
  let previousBoundary = null;
  const steps = [];
  /** @type {number[]} */
  const latencies = [];
  /** @type {{ at: number, totalsChars: number, omittedGroups: number }[]} */
  const samples = [];
  for (let i = 0; i < size.prefixGroups; i++) {
    const group = streams.prefix.next();
    const response = (await api.appendBatch(a.conversation, group.events)).json();
    ledgers.prefix.add(response.results[0].event.seq, userChars(group.question), group.answer.length);
    const contextResponse = await api.context(a.conversation, a.id);
    latencies.push(contextResponse.ms);
    const context = contextResponse.json();
    const boundary = context.manifest.boundary?.id ?? null;
    const at = Date.now();
    samples.push({ at, totalsChars: context.manifest.totals.chars, omittedGroups: context.manifest.omitted.groups });
    if (previous !== null) {
      const reuse = prefixReuse(previous, context.messages);
      steps.push({ ...reuse, at, boundaryChanged: boundary !== previousBoundary });
    }
    previous = context.messages;
    previousBoundary = boundary;
  }
  await waitForCatchUp({ api, follower, agentId: a.id, trigger: DEFAULT_POLICY.trigger });
  const between = steps.filter((s) => !s.boundaryChanged);
  const runs = follower.plannedRuns();
  const openAt = inFlightAt(follower);
  // Pairs whose second call came while a compaction was planned and not yet settled: how long a
  // run is in flight is timing, so these are reported apart (and should extend like any other).
  const inFlightPairs = between.filter((s) => openAt(s.at));
  // Compactor input at a conversational pace: each run freezes about trigger − retain characters,
  // the steady state a long-lived chat converges to (the bulk replay's catch-up runs freeze more).
  const paced = modelEdge(fake, "bench-prefix");
  const pacedCovered = ledgers.prefix.charsThrough(Math.max(0, ...runs.filter((r) => r.completed !== undefined).map((r) => r.completed.detail.coveredThroughSeq)));
  const stability = {
    responses: steps.length + 1,
    pairs: steps.length,
    pairsAcrossCompaction: steps.length - between.length,
    shareExtendingPrevious: round(steps.filter((s) => s.extendsPrevious).length / steps.length, 4),
    shareExtendingPreviousBetweenCompactions: round(between.filter((s) => s.extendsPrevious).length / between.length, 4),
    cacheableCharShare: round(sum(steps.map((s) => s.common)) / sum(steps.map((s) => s.total)), 4),
    cacheableCharShareBetweenCompactions: round(sum(between.map((s) => s.common)) / sum(between.map((s) => s.total)), 4),
    pairsWhileInFlight: inFlightPairs.length,
    shareExtendingPreviousWhileInFlight: inFlightPairs.length === 0 ? null : round(inFlightPairs.filter((s) => s.extendsPrevious).length / inFlightPairs.length, 4),
    cacheableCharShareWhileInFlight: inFlightPairs.length === 0 ? null : round(sum(inFlightPairs.map((s) => s.common)) / sum(inFlightPairs.map((s) => s.total)), 4),
    samplesWithOmittedGroups: samples.filter((x) => x.omittedGroups > 0).length,
    compactions: runs.length,
    conversationChars: ledgers.prefix.chars,
    servedCharsMean: round(mean(samples.map((x) => x.totalsChars)), 0),
    servedCharsMax: max(samples.map((x) => x.totalsChars)),
    contextLatency: roundSummary(latencySummary(latencies)),
    compactorInput: {
      compactions: runs.length,
      modelRequests: paced.calls.length,
      inputChars: paced.input,
      coveredChars: pacedCovered,
      meanFrozenChars: round(mean(runs.map((r) => r.planned.detail.frozenChars)), 0),
      ratioPerCoveredChar: pacedCovered > 0 ? round(paced.input / pacedCovered, 3) : null,
      renderedSliceChars: paced.renderedSliceChars,
      ratioToRenderedSlice: paced.ratioToRenderedSlice,
      extractorPrefix: roundedShare(extractorPrefixShare(paced.extractions, paced.calls)),
    },
  };
  log(`  ${(stability.shareExtendingPrevious * 100).toFixed(1)}% of responses extend the previous one (${stability.pairsAcrossCompaction} pairs straddle a compaction); ${(stability.cacheableCharShare * 100).toFixed(1)}% of characters cacheable`);
  log(`  with a compaction in flight: ${stability.pairsWhileInFlight} pairs, ${stability.shareExtendingPreviousWhileInFlight === null ? "–" : `${(stability.shareExtendingPreviousWhileInFlight * 100).toFixed(1)}%`} extend the previous one; ${stability.samplesWithOmittedGroups} responses omitted groups`);
  return { stability, pacedLag: pacedLag(follower, samples) };
}

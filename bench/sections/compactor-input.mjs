// §4: what the compactor reads, counted at the model's edge (the fake model's recorded requests)
// on the long replay: against the rendered slices it carried (what a run adds beyond the
// contract's own `[msgId] @handle (role):` lines), against the conversation and the baselines it
// replaces, and how much of the memory extraction that follows each compaction a provider's
// prompt cache holding the compactor's request could serve.
import { extractorPrefixShare } from "../lib/prefix-reuse.mjs";
import { DEFAULT_POLICY, FAKE_SUMMARY_CHARS, fmt } from "../lib/scenario.mjs";
import { max, mean, round } from "../lib/stats.mjs";

const sum = (/** @type {number[]} */ v) => v.reduce((a, b) => a + b, 0);

/**
 * A scenario's compactor and extractor requests, and the ratio of the compactor's characters to
 * the rendered slices they carried: every request counts (a retry is overhead), each slice once.
 * @param {{ calls: any[] }} fake @param {string} model
 */
export function modelEdge(fake, model) {
  const calls = fake.calls.filter((c) => c.model === model && c.process === "compactor");
  const ok = calls.filter((c) => c.status === 200);
  const extractions = fake.calls.filter((c) => c.model === model && c.process === "extractor");
  const input = sum(calls.map((c) => c.totalChars));
  const renderedSliceChars = sum([...new Map(ok.map((c) => [c.sliceKey, c.sliceChars])).values()]);
  return { calls, ok, extractions, input, renderedSliceChars, ratioToRenderedSlice: renderedSliceChars > 0 ? round(input / renderedSliceChars, 3) : null };
}

/** The extractor-prefix measure as the report keeps it. @param {ReturnType<typeof extractorPrefixShare>} s */
export const roundedShare = (s) => ({ ...s, share: s.share === null ? null : round(s.share, 4) });

/**
 * @param {{ fake: { calls: any[] }, log: (line: string) => void, history: import("./histories.mjs").Histories } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measureCompactorInput({ fake, log, ledgers, followers, history }) {
  const follower = followers.big;
  await follower.poll();
  const ledger = ledgers.big;
  const runs = follower.plannedRuns().sort((a, b) => a.planned.seq - b.planned.seq);
  const { calls, ok, extractions, input, renderedSliceChars, ratioToRenderedSlice } = modelEdge(fake, "bench-big");
  const systemChars = ok[0]?.systemChars ?? 0;
  const frozenChars = sum(runs.map((r) => r.planned.detail.frozenChars));
  const sliceChars = sum(ok.map((c) => c.sliceChars));
  const previousBoundaryChars = sum(ok.map((c) => c.previousBoundaryChars));
  const completed = runs.filter((r) => r.completed !== undefined);
  const coveredThrough = Math.max(0, ...completed.map((r) => r.completed.detail.coveredThroughSeq));

  // Baseline A: at every trigger, re-summarize the whole history up to the same coverage point
  // (native characters, no markup, plus the same system prompt: generous to the baseline).
  const resummarize = sum(runs.map((r) => systemChars + ledger.charsThrough(r.planned.detail.throughSeq)));
  // Baseline B: no compaction; before every reply the model reads the whole history so far.
  let before = 0;
  let noCompaction = 0;
  let replies = 0;
  for (const s of ledger.sources) {
    if (s.replyChars > 0) {
      noCompaction += before + s.userChars;
      replies += 1;
    }
    before += s.userChars + s.replyChars;
  }
  // Foldline: what the agent is served when it replies, as preflight measured it for that source.
  const activeBySource = new Map(follower.preflights.map((p) => [p.sourceSeq, p.activeChars]));
  for (const r of runs) activeBySource.set(r.planned.detail.triggerSeq, r.planned.detail.activeChars);
  const served = ledger.sources.filter((s) => s.replyChars > 0).map((s) => activeBySource.get(s.seq)).filter((v) => v !== undefined);
  // Worst case: every previous boundary at the policy's maxSummaryChars instead of the fake's size.
  const worstCase = input + sum(ok.filter((c) => c.previousBoundaryChars > 0).map((c) => DEFAULT_POLICY.maxSummaryChars - c.previousBoundaryChars));
  const extractorPrefix = roundedShare(extractorPrefixShare(extractions, calls));

  const metric = {
    conversationChars: ledger.chars,
    replies,
    compactions: runs.length,
    modelRequests: calls.length,
    // The memory extraction after each settled compaction, on the same model: its own cost.
    extractionRequests: extractions.length,
    extractionInputChars: sum(extractions.map((c) => c.totalChars)),
    coveredChars: ledger.charsThrough(coveredThrough),
    compactorInputChars: input,
    // Target (a): what the run adds beyond the contract's own slice format.
    renderedSliceChars,
    ratioToRenderedSlice,
    // Target (b): the share of the extractor's requests a cache of the compactor's could serve.
    extractorPrefix,
    ratio: round(input / ledger.chars, 3),
    ratioPerCoveredChar: round(input / ledger.charsThrough(coveredThrough), 3),
    ifSummariesAtMaxChars: worstCase,
    maxSummaryChars: DEFAULT_POLICY.maxSummaryChars,
    fakeSummaryChars: FAKE_SUMMARY_CHARS,
    ratioIfSummariesAtMax: round(worstCase / ledger.chars, 3),
    breakdown: {
      systemPromptChars: sum(ok.map((c) => c.systemChars)),
      previousBoundaryChars,
      sliceChars,
      frozenNativeChars: frozenChars,
      sliceMarkupOverhead: round(sliceChars / frozenChars - 1, 3),
      otherFramingChars: sum(ok.map((c) => c.userChars - c.sliceChars - c.previousBoundaryChars - c.amendmentsChars - c.pagesChars)),
    },
    baselines: {
      resummarizeWholeHistoryChars: resummarize,
      resummarizeRatio: round(resummarize / ledger.chars, 2),
      noCompactionModelInputChars: noCompaction,
      noCompactionRatio: round(noCompaction / ledger.chars, 1),
      noCompactionMeanPerReply: round(noCompaction / replies, 0),
      noCompactionLastReply: before,
      foldlineMeanPerReply: round(mean(served), 0),
      foldlineMaxPerReply: max(served),
      foldlineRepliesMeasured: served.length,
    },
    ingestSeconds: round(history.bigIngestSeconds, 1),
    ingestCharsPerSecond: round(ledger.chars / history.bigIngestSeconds, 0),
  };
  log(`[4 compactor input] ${fmt(input)} chars for ${fmt(ledger.chars)} conversation chars: ratio ${metric.ratio}; re-summarize ${metric.baselines.resummarizeRatio}; no compaction ${metric.baselines.noCompactionRatio}`);
  log(`[4 compactor input] ÷ the rendered slices it carried (${fmt(renderedSliceChars)} chars): ${ratioToRenderedSlice}; extractor requests served by the compactor's prefix: ${extractorPrefix.share === null ? "–" : `${(extractorPrefix.share * 100).toFixed(1)}%`} of ${fmt(extractorPrefix.inputChars)} chars (${extractorPrefix.requests} requests)`);
  return metric;
}

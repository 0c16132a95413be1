// The LoCoMo section's scoring: for each question of a replayed conversation, whether at least one
// of its evidence turns is in what each approach gives the agent (lib/locomo-phase.mjs replays and
// asks; this module decides what counts as found). Changes with what the Worker serves and how a
// served turn, memory entry or search result is recognised.
//   served      `GET …/context?agent=&query=<question>`: the boundary, the memory envelope and the exact tail
//   search      `GET …/memory/search?q=<question>&limit=50`, results in order within the memory budget
//   BM25        plain BM25 over every raw turn, top turns within the memory budget (computed in Node)
//   BM25 + tail plain BM25 over the turns older than the served tail, within the budget, + that tail
import { Api } from "./api.mjs";
import { bm25Index, packRanked } from "./memory-baselines.mjs";
import { served } from "./memory-phase.mjs";
import { max, mean, percentile, round } from "./stats.mjs";

/** The context policy's memory budget when the served manifest does not say (the contract's default). */
export const DEFAULT_MEMORY_BUDGET = 4_000;
export const SEARCH_LIMIT = 50;
const MEMORY_ENVELOPE = '<untrusted-history-summary kind="memory">';
/** The message an extracted-page entry cites, at the end of its line (src/core/fact-merge.ts, recall-rank.ts entriesOf). */
const ENTRY_SOURCE = /\(msg ([^,()\s]+)(?:, seq \d+)?(?:, ref [0-9a-f]{12})?\)$/gm;

/** @typedef {import("./locomo-data.mjs").Locomo} Locomo */
/** @typedef {import("./locomo-data.mjs").Turn} Turn */
/** @typedef {{ data: Locomo, conversation: string, turns: Turn[], byDia: Map<string, Turn>, follower: import("./api.mjs").LogFollower, seconds: number, shard: string | undefined }} Replayed */

/**
 * Undoes `escapeEnvelopeText` (src/core/render.ts): `&lt;` `&gt;` `&amp;`, the ampersand last; and
 * the tab a Worker that indents an item's continuation lines puts after each line break.
 * @param {string} s
 */
const unescapeEnvelope = (s) => s.replaceAll("\n\t", "\n").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");

/** The sequence number of a turn id (`s<seq>` for a message, `p<seq>` for a reply), or null. @param {string | null} id */
const seqOf = (id) => (id === null ? null : Number(/^[sp](\d+)$/.exec(id)?.[1] ?? Number.NaN));

/**
 * @typedef {{ conversation: string, question: string, category: number, refused: boolean, served: boolean, envelopeOnly: boolean, withEntries: boolean, search: boolean, bm25: boolean, bm25Tail: boolean, servedBy: string[], servedChars: number | null, memoryEnvelopeChars: number | null, bm25TailChars: number, entriesCited: number, contextMs: number, searchMs: number }} QuestionResult
 */

/**
 * A question's evidence turns, as replayed (an id the conversation does not hold is left out).
 * @param {{ byDia: Map<string, Turn> }} c @param {{ evidence: string[] }} qa
 */
export const evidenceOf = (c, qa) => qa.evidence.map((id) => c.byDia.get(id)).filter((t) => t !== undefined);

/**
 * Every question of one replayed conversation, four ways.
 * @param {Api} api @param {string} agent @param {Replayed} c
 */
export async function askAll(api, agent, c) {
  const path = Api.conversationPath(c.conversation);
  const plain = (await api.context(c.conversation, agent)).json();
  const policy = plain.manifest.policy ?? {};
  const budget = typeof policy.memoryBudgetChars === "number" ? policy.memoryBudgetChars : DEFAULT_MEMORY_BUDGET;
  const tailFirst = plain.manifest.tail.turns === 0 ? Number.POSITIVE_INFINITY : seqOf(plain.manifest.tail.firstTurnId) ?? Number.NaN;
  const tailLast = seqOf(plain.manifest.tail.lastTurnId) ?? Number.NEGATIVE_INFINITY;
  if (Number.isNaN(tailFirst) || Number.isNaN(tailLast)) throw new Error(`${c.data.id}: the manifest's tail turn ids ${plain.manifest.tail.firstTurnId} … ${plain.manifest.tail.lastTurnId} are not s<seq>/p<seq>`);
  const tailStart = c.turns.findIndex((t) => t.seq >= tailFirst);
  const olderCount = tailStart < 0 ? c.turns.length : tailStart;
  const rendered = c.turns.map((t) => t.rendered);
  const index = bm25Index(rendered);
  const olderIndex = bm25Index(rendered.slice(0, olderCount));
  /** @type {QuestionResult[]} */
  const questions = [];
  /** @type {{ status: number, body: string }[]} */
  const refusals = [];
  let tailDiffers = 0;
  for (const qa of c.data.qa) {
    const evidence = evidenceOf(c, qa);
    const evidenceIds = new Set(evidence.map((t) => t.messageId));
    const evidenceIndexes = new Set(evidence.map((t) => t.index));
    /** @type {QuestionResult} */
    const r = { conversation: c.data.id, question: qa.question, category: qa.category, refused: false, served: false, envelopeOnly: false, withEntries: false, search: false, bm25: false, bm25Tail: false, servedBy: [], servedChars: null, memoryEnvelopeChars: null, bm25TailChars: 0, entriesCited: 0, contextMs: 0, searchMs: 0 };

    // 1. What is served with the question as the query.
    const response = await api.request("GET", `${path}/context?agent=${encodeURIComponent(agent)}&query=${encodeURIComponent(qa.question)}`);
    r.contextMs = response.ms;
    if (response.status !== 200) {
      r.refused = true;
      refusals.push({ status: response.status, body: response.text.slice(0, 300) });
    } else {
      const { messages, manifest } = response.json();
      const first = manifest.tail.turns === 0 ? Number.POSITIVE_INFINITY : seqOf(manifest.tail.firstTurnId) ?? Number.NaN;
      const last = seqOf(manifest.tail.lastTurnId) ?? Number.NEGATIVE_INFINITY;
      if (first !== tailFirst || last !== tailLast) tailDiffers += 1;
      const memoryTurns = new Set((manifest.memory?.turns ?? []).map((/** @type {{ messageId: string }} */ t) => t.messageId));
      const memoryMessage = messages.find((/** @type {{ content: string }} */ m) => m.content.startsWith(MEMORY_ENVELOPE));
      const memoryText = unescapeEnvelope(memoryMessage?.content ?? "");
      const servedText = unescapeEnvelope(served(messages).text);
      // Extracted-page entries name the message they were taken from: `(msg <id>)`, or as a page
      // holds them `(msg <id>[, seq <n>], ref <12 hex>)`.
      const entryIds = new Set([...memoryText.matchAll(ENTRY_SOURCE)].map((m) => m[1]));
      const inTail = evidence.some((t) => t.seq >= first && t.seq <= last);
      const inMemoryTurns = evidence.some((t) => memoryTurns.has(t.messageId));
      const textInMemory = evidence.some((t) => memoryText.includes(t.text));
      const textServed = evidence.some((t) => servedText.includes(t.text));
      const byEntry = evidence.some((t) => entryIds.has(t.messageId));
      r.servedBy = [inTail ? "tail" : null, inMemoryTurns ? "memory turn" : null, textServed && !inTail && !inMemoryTurns ? "text" : null].filter((x) => x !== null);
      r.served = inTail || inMemoryTurns || textServed;
      r.envelopeOnly = inMemoryTurns || textInMemory;
      r.withEntries = r.served || byEntry;
      r.servedChars = served(messages).chars;
      r.memoryEnvelopeChars = memoryMessage?.content.length ?? 0;
      r.entriesCited = entryIds.size;
    }

    // 2. Recall's own search, its results in order within the memory budget.
    const search = await api.request("GET", `${path}/memory/search?agent=${encodeURIComponent(agent)}&q=${encodeURIComponent(qa.question)}&limit=${SEARCH_LIMIT}`);
    r.searchMs = search.ms;
    if (search.status !== 200) {
      r.refused = true;
      refusals.push({ status: search.status, body: search.text.slice(0, 300) });
    } else {
      const results = /** @type {{ type: string, content: string, sources?: { messageId: string }[] }[]} */ (search.json().results ?? []);
      const packed = packRanked(results.map((_, i) => i), (i) => results[i]?.content.length ?? 0, budget);
      r.search = packed.chosen.some((i) => {
        const hit = results[i];
        if (hit === undefined) return false;
        return (hit.type === "turn" && (hit.sources ?? []).some((s) => evidenceIds.has(s.messageId))) || evidence.some((t) => t.text === hit.content);
      });
    }

    // 3. Plain BM25 over every raw turn; 4. over the turns older than the tail, beside the tail.
    r.bm25 = packRanked(index.rank(qa.question), (i) => rendered[i]?.length ?? 0, budget).chosen.some((i) => evidenceIndexes.has(i));
    const older = packRanked(olderIndex.rank(qa.question), (i) => rendered[i]?.length ?? 0, budget);
    r.bm25Tail = older.chosen.some((i) => evidenceIndexes.has(i)) || evidence.some((t) => t.seq >= tailFirst && t.seq <= tailLast);
    r.bm25TailChars = older.chars + plain.manifest.tail.chars;
    questions.push(r);
  }
  const runs = c.follower.plannedRuns();
  return {
    questions,
    summary: {
      conversation: c.data.id,
      telegram: c.conversation,
      speakers: [c.data.speaker_a, c.data.speaker_b],
      sessions: c.data.sessions.length,
      turns: c.turns.length,
      chars: rendered.reduce((n, t) => n + t.length, 0),
      replaySeconds: round(c.seconds, 1),
      compactions: runs.length,
      completed: runs.filter((r) => r.completed !== undefined).length,
      shard: c.shard,
      boundaryEnvelopeChars: plain.manifest.boundary?.envelopeChars ?? null,
      compactor: plain.manifest.boundary?.model ?? null,
      tailTurns: plain.manifest.tail.turns,
      tailChars: plain.manifest.tail.chars,
      turnsOlderThanTail: olderCount,
      memoryBudgetChars: budget,
      responsesWithAnotherTail: tailDiffers,
      refusals,
      ...summarize(questions),
    },
  };
}

/** Shares of each approach over a set of questions. @param {QuestionResult[]} qs */
export function summarize(qs) {
  const share = (/** @type {(q: QuestionResult) => boolean} */ f) => {
    const hit = qs.filter(f).length;
    return { found: hit, share: qs.length === 0 ? null : round(hit / qs.length, 4) };
  };
  const answered = qs.filter((q) => q.servedChars !== null);
  return {
    questions: qs.length,
    refused: qs.filter((q) => q.refused).length,
    rows: {
      served: share((q) => q.served),
      envelopeOnly: share((q) => q.envelopeOnly),
      withEntries: share((q) => q.withEntries),
      search: share((q) => q.search),
      bm25: share((q) => q.bm25),
      bm25Tail: share((q) => q.bm25Tail),
    },
    servedBy: {
      tail: qs.filter((q) => q.servedBy.includes("tail")).length,
      memoryTurn: qs.filter((q) => q.servedBy.includes("memory turn")).length,
      textOnly: qs.filter((q) => q.servedBy.length === 1 && q.servedBy[0] === "text").length,
    },
    meanServedChars: answered.length === 0 ? null : round(mean(answered.map((q) => q.servedChars ?? 0)), 0),
    maxServedChars: answered.length === 0 ? null : max(answered.map((q) => q.servedChars ?? 0)),
    meanMemoryEnvelopeChars: answered.length === 0 ? null : round(mean(answered.map((q) => q.memoryEnvelopeChars ?? 0)), 0),
    maxMemoryEnvelopeChars: answered.length === 0 ? null : max(answered.map((q) => q.memoryEnvelopeChars ?? 0)),
    responsesWithMemoryEnvelope: answered.filter((q) => (q.memoryEnvelopeChars ?? 0) > 0).length,
    responsesWithEntries: answered.filter((q) => q.entriesCited > 0).length,
    meanBm25TailChars: qs.length === 0 ? null : round(mean(qs.map((q) => q.bm25TailChars)), 0),
    // Wall time of each call while the questions were asked (two conversations at once): for orientation, not the latency measure.
    contextMsP50: qs.length === 0 ? null : round(percentile(qs.map((q) => q.contextMs), 50), 1),
    searchMsP50: qs.length === 0 ? null : round(percentile(qs.map((q) => q.searchMs), 50), 1),
  };
}

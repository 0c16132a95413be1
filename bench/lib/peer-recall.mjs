// The peer section's reads (lib/peer-phase.mjs replays; this module reads): how long each system
// takes to give an agent its context, and whether what it gives holds the evidence for LoCoMo's
// questions within the same budget. Foldline's questions are asked and scored exactly as §12 asks
// them (lib/locomo-questions.mjs `askAll`: served = `GET …/context?agent=&query=`, search =
// `GET …/memory/search` packed to the memory budget). The peer is asked the same questions:
//   history         what the SDK gives a model: the active path with its compaction overlays (`getHistory`)
//   search          `session.search(question)` (the SDK quotes the query: one FTS5 phrase), its
//                   results in order within the same memory budget
//   served          history + search: what a bot on the peer would put before the model
//   search by word  one `session.search(word)` per content word of the question, messages ranked by
//                   how many words found them (a bot's own code over the SDK's search, not the SDK's),
//                   within the budget; served by word = history + that
// A question counts when at least one of its evidence turns is there: by message id (the peer's
// messages carry the Telegram message id Foldline stores), or by its exact text in a summary.
import { askAll, evidenceOf } from "./locomo-questions.mjs";
import { packRanked } from "./memory-baselines.mjs";
import { served } from "./memory-phase.mjs";
import { latencySummary, mean, round, roundSummary } from "./stats.mjs";

/** Context reads per conversation and system, alternating. */
const CONTEXT_SAMPLES = 10;
/** Conversations whose questions are asked at once, as §12 asks them. */
const ASK_CONCURRENCY = 2;
const SEARCH_LIMIT = 50;
const WORD_LIMIT = 20;
const STOP = new Set("the and for are was were did does what when where which who whom whose why how that this with from have has had about into their they them his her she him its you your our out than then also been being any some".split(" "));

/** @typedef {import("./peer-phase.mjs").Peer} Peer */
/** @typedef {import("./locomo-phase.mjs").Replayed & { object: string }} Replayed */

/** The text of the peer's messages. @param {{ text: string }[]} messages */
const charsOf = (messages) => messages.reduce((n, m) => n + m.text.length, 0);

/**
 * Each system's context read, `CONTEXT_SAMPLES` times per conversation, one after the other:
 * Foldline's `GET …/context?agent=` (boundary, amendments, exact tail) and the peer's history with
 * its overlays. Timed at the client, through the same Worker.
 * @param {{ api: import("./api.mjs").Api, peer: Peer, agent: string, targets: { conversation: string, object: string }[] }} o
 */
export async function contextLatency({ api, peer, agent, targets }) {
  /** @type {{ ms: number[], chars: number[] }} */
  const foldline = { ms: [], chars: [] };
  /** @type {{ ms: number[], chars: number[] }} */
  const mine = { ms: [], chars: [] };
  for (const { conversation, object } of targets) {
    for (let i = 0; i < CONTEXT_SAMPLES; i++) {
      const response = await api.context(conversation, agent);
      foldline.ms.push(response.ms);
      foldline.chars.push(served(response.json().messages).chars);
      const { ms, body } = await peer.call(object, "history");
      mine.ms.push(ms);
      mine.chars.push(charsOf(body.messages));
    }
  }
  const summary = (/** @type {{ ms: number[], chars: number[] }} */ s) => ({ ...roundSummary(latencySummary(s.ms)), meanChars: round(mean(s.chars), 0), maxChars: Math.max(...s.chars) });
  return { samplesPerConversation: CONTEXT_SAMPLES, conversations: targets.length, foldline: summary(foldline), peer: summary(mine) };
}

/** The content words of a question, each once. @param {string} question */
const wordsOf = (question) => [...new Set((question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 3 && !STOP.has(w)))];

/**
 * Messages found by one search per word, most words first, then by their summed rank.
 * @param {{ id: string, content: string }[][]} perWord
 */
function byWords(perWord) {
  /** @type {Map<string, { content: string, words: number, rank: number }>} */
  const found = new Map();
  for (const results of perWord) {
    for (const [rank, r] of results.entries()) {
      const seen = found.get(r.id) ?? { content: r.content, words: 0, rank: 0 };
      seen.words += 1;
      seen.rank += rank;
      found.set(r.id, seen);
    }
  }
  return [...found.entries()].sort(([, a], [, b]) => b.words - a.words || a.rank - b.rank).map(([id, r]) => ({ id, content: r.content }));
}

/**
 * Within `budget`, in order: does any result name an evidence message?
 * @param {{ id: string, content: string }[]} results @param {Set<string>} evidenceIds @param {number} budget
 */
function foundIn(results, evidenceIds, budget) {
  const packed = packRanked(results.map((_, i) => i), (i) => results[i]?.content.length ?? 0, budget);
  return { hit: packed.chosen.some((i) => evidenceIds.has(results[i]?.id ?? "")), chars: packed.chars };
}

/**
 * Every question of one conversation, asked of the peer.
 * @param {Peer} peer @param {Replayed} c @param {number} budget
 */
async function askPeer(peer, c, budget) {
  const history = /** @type {{ id: string, role: string, text: string }[]} */ ((await peer.call(c.object, "history")).body.messages);
  const kept = new Set(history.filter((m) => !m.id.startsWith("compaction_")).map((m) => m.id));
  const summaries = history.filter((m) => m.id.startsWith("compaction_")).map((m) => m.text).join("\n");
  const rows = { history: 0, search: 0, served: 0, searchByWord: 0, servedByWord: 0 };
  /** @type {number[]} */
  const searchMs = [];
  /** @type {number[]} */
  const searchChars = [];
  let phraseResults = 0;
  for (const qa of c.data.qa) {
    const evidence = evidenceOf(c, qa);
    const ids = new Set(evidence.map((t) => t.messageId));
    const inHistory = evidence.some((t) => kept.has(t.messageId) || summaries.includes(t.text));
    const search = await peer.call(c.object, "search", { query: qa.question, limit: SEARCH_LIMIT });
    searchMs.push(search.ms);
    phraseResults += search.body.length > 0 ? 1 : 0;
    const phrase = foundIn(search.body, ids, budget);
    searchChars.push(phrase.chars);
    const words = wordsOf(qa.question);
    const perWord = words.length === 0 ? [] : (await peer.call(c.object, "search-each", { queries: words, limit: WORD_LIMIT })).body;
    const word = foundIn(byWords(perWord), ids, budget);
    rows.history += inHistory ? 1 : 0;
    rows.search += phrase.hit ? 1 : 0;
    rows.served += inHistory || phrase.hit ? 1 : 0;
    rows.searchByWord += word.hit ? 1 : 0;
    rows.servedByWord += inHistory || word.hit ? 1 : 0;
  }
  return { rows, questions: c.data.qa.length, historyMessages: history.length, historyChars: charsOf(history), overlays: history.length - kept.size, questionsWithAPhraseHit: phraseResults, searchMs, meanSearchChars: mean(searchChars) };
}

/**
 * LoCoMo's questions of both systems, `ASK_CONCURRENCY` conversations at a time (each conversation's
 * Foldline questions first, then the peer's).
 * @param {{ api: import("./api.mjs").Api, peer: Peer, agent: string, replayed: Replayed[], log: (line: string) => void }} o
 */
export async function askBoth({ api, peer, agent, replayed, log }) {
  /** @type {any[]} */
  const rows = [];
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < replayed.length; i = next++) {
      const c = /** @type {Replayed} */ (replayed[i]);
      const asked = await askAll(api, agent, { ...c, shard: undefined });
      const foldline = asked.summary;
      const mine = await askPeer(peer, c, foldline.memoryBudgetChars);
      rows[i] = { conversation: c.data.id, foldline, foldlineMs: asked.questions.map((q) => ({ context: q.contextMs, search: q.searchMs })), peer: mine };
      const pct = (/** @type {number} */ k) => `${((k / mine.questions) * 100).toFixed(1)}%`;
      log(`  ${c.data.id}: ${mine.questions} questions: Foldline served ${pct(foldline.rows.served.found)}, search ${pct(foldline.rows.search.found)}; peer served ${pct(mine.rows.served)}, search ${pct(mine.rows.search)}, by word ${pct(mine.rows.searchByWord)} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    }
  };
  await Promise.all(Array.from({ length: ASK_CONCURRENCY }, worker));
  const questions = rows.reduce((n, r) => n + r.peer.questions, 0);
  const share = (/** @type {number} */ found) => ({ found, share: round(found / questions, 4) });
  const sum = (/** @type {(r: any) => number} */ f) => rows.reduce((n, r) => n + f(r), 0);
  return {
    questions,
    budgetChars: rows[0]?.foldline.memoryBudgetChars ?? null,
    seconds: round((Date.now() - started) / 1000, 1),
    searchLimits: { phrase: SEARCH_LIMIT, word: WORD_LIMIT },
    foldline: {
      served: share(sum((r) => r.foldline.rows.served.found)),
      search: share(sum((r) => r.foldline.rows.search.found)),
      meanServedChars: round(mean(rows.map((r) => r.foldline.meanServedChars)), 0),
      contextMs: roundSummary(latencySummary(rows.flatMap((r) => r.foldlineMs.map((/** @type {any} */ q) => q.context)))),
      searchMs: roundSummary(latencySummary(rows.flatMap((r) => r.foldlineMs.map((/** @type {any} */ q) => q.search)))),
    },
    peer: {
      history: share(sum((r) => r.peer.rows.history)),
      search: share(sum((r) => r.peer.rows.search)),
      served: share(sum((r) => r.peer.rows.served)),
      searchByWord: share(sum((r) => r.peer.rows.searchByWord)),
      servedByWord: share(sum((r) => r.peer.rows.servedByWord)),
      questionsWithAPhraseHit: sum((r) => r.peer.questionsWithAPhraseHit),
      meanHistoryChars: round(mean(rows.map((r) => r.peer.historyChars)), 0),
      overlays: sum((r) => r.peer.overlays),
      searchMs: roundSummary(latencySummary(rows.flatMap((r) => r.peer.searchMs))),
    },
    perConversation: rows.map((r) => ({ conversation: r.conversation, questions: r.peer.questions, foldline: { served: r.foldline.rows.served.found, search: r.foldline.rows.search.found }, peer: r.peer.rows, peerHistoryChars: r.peer.historyChars })),
  };
}

// What a provider's prompt cache could serve of one request, given an earlier one: §7 compares each
// context response with the previous one, §4 each memory extraction's request with the compactor's
// request for the same slice. Pure functions of the messages.

/** Longest common prefix of two strings. @param {string} a @param {string} b */
function commonPrefix(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * How much of `current` a provider prompt cache keyed on `previous` could serve: whole identical
 * messages, then the common prefix of the first differing message's content (same role only).
 * @param {readonly { role: string, content: string }[]} previous @param {readonly { role: string, content: string }[]} current
 */
export function prefixReuse(previous, current) {
  let common = 0;
  let whole = true;
  for (let i = 0; i < previous.length; i++) {
    const a = previous[i];
    const b = current[i];
    if (a === undefined) break;
    if (b === undefined || a.role !== b.role || a.content !== b.content) {
      whole = false;
      if (b !== undefined && a.role === b.role) common += commonPrefix(a.content, b.content);
      break;
    }
    common += a.content.length;
  }
  const total = current.reduce((n, m) => n + m.content.length, 0);
  return { extendsPrevious: whole && current.length >= previous.length, common, total };
}

/**
 * @typedef {{ at: number, status: number, sliceKey: string, totalChars: number, messages: readonly { role: string, content: string }[], schema: string | null }} RecordedCall
 *   a request as the fake model recorded it (test/fake-openai/server.ts)
 */

/**
 * The share of the memory extractor's requests that a prompt cache holding the compactor's
 * requests could serve. Each extraction is compared with the compactor's requests for the same
 * slice (the fake's `sliceKey`: the `<slice>` section of the first user message) that reached the
 * model before it, the best of them counting (a retry's request is as cached as the first); an
 * extraction with no such request shares nothing. Characters are every message's. Counted apart:
 * the extractions whose structured-output schema differs from their compaction's, which a provider
 * that caches the schema ahead of the messages (OpenAI documents that it does) could not serve.
 * @param {readonly RecordedCall[]} extractions @param {readonly RecordedCall[]} compactions
 */
export function extractorPrefixShare(extractions, compactions) {
  let inputChars = 0;
  let cacheableChars = 0;
  let paired = 0;
  let leadingMessages = Number.POSITIVE_INFINITY;
  let otherSchema = 0;
  for (const e of extractions) {
    const sameSlice = compactions.filter((c) => c.sliceKey === e.sliceKey && c.at <= e.at);
    const best = Math.max(0, ...sameSlice.map((c) => prefixReuse(c.messages, e.messages).common));
    if (sameSlice.length > 0) paired += 1;
    // How many whole leading messages the extraction shares with the compaction it follows.
    const first = sameSlice.at(-1);
    let whole = 0;
    while (first !== undefined && whole < first.messages.length && e.messages[whole]?.role === first.messages[whole]?.role && e.messages[whole]?.content === first.messages[whole]?.content) whole++;
    leadingMessages = Math.min(leadingMessages, whole);
    if (first !== undefined && first.schema !== e.schema) otherSchema += 1;
    inputChars += e.totalChars;
    cacheableChars += best;
  }
  return {
    requests: extractions.length,
    pairedWithCompaction: paired,
    inputChars,
    cacheableChars,
    share: inputChars === 0 ? null : cacheableChars / inputChars,
    /** The fewest whole leading messages any extraction shared with its compaction's latest request. */
    minWholeLeadingMessages: extractions.length === 0 ? null : leadingMessages,
    withOtherSchema: otherSchema,
  };
}

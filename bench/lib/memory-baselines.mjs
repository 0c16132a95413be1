// The memory section's baselines, computed in Node from the generated turns: what an agent would be
// served without Foldline's memory. Keep-the-newest truncation at a character budget, and plain
// BM25 over the raw turns at the memory budget (the top turns for the question, whole, until the
// budget is full) beside the same exact tail Foldline served.

// Words too common to say what a question is about (the question's frame, not its subject).
const STOP = new Set(
  "the and for are but not you all any can had her was one our out has him his how man new now old see two way who did its let put say she too use what when where which why will with this that from they them then than there their have been into more some such only also very just about would could should does doing these those your yours mine here onto over under after before while during each few other same so if is it of to in on at by an be as or do we us me my i a".split(
    " ",
  ),
);

/** Lower-cased word terms of a text, stop words and one- and two-letter words left out. @param {string} text */
export function terms(text) {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 3 && !STOP.has(w));
}

/**
 * A BM25 index (Okapi, k1 1.2, b 0.75: the usual defaults, and FTS5's) over documents given as text.
 * @param {string[]} documents
 */
export function bm25Index(documents, k1 = 1.2, b = 0.75) {
  const docs = documents.map((d) => {
    /** @type {Map<string, number>} */
    const tf = new Map();
    const words = terms(d);
    for (const w of words) tf.set(w, (tf.get(w) ?? 0) + 1);
    return { tf, length: words.length };
  });
  const avgLength = docs.reduce((n, d) => n + d.length, 0) / Math.max(1, docs.length);
  /** @type {Map<string, number>} */
  const df = new Map();
  for (const d of docs) for (const w of d.tf.keys()) df.set(w, (df.get(w) ?? 0) + 1);
  const idf = (/** @type {string} */ w) => {
    const n = df.get(w) ?? 0;
    return Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
  };
  return {
    /** Document indexes with a positive score, best first (ties: the newer document first). @param {string} query */
    rank(query) {
      const q = [...new Set(terms(query))];
      const scored = [];
      for (let i = 0; i < docs.length; i++) {
        const d = docs[i];
        if (d === undefined) continue;
        let score = 0;
        for (const w of q) {
          const f = d.tf.get(w) ?? 0;
          if (f > 0) score += idf(w) * ((f * (k1 + 1)) / (f + k1 * (1 - b + (b * d.length) / avgLength)));
        }
        if (score > 0) scored.push({ i, score });
      }
      return scored.sort((x, y) => y.score - x.score || y.i - x.i).map((s) => s.i);
    },
  };
}

/**
 * Takes items in rank order while they fit: one that would overflow is skipped and the next tried
 * (how Foldline packs recalled pages), so the total never exceeds `budget`.
 * @param {number[]} ranked @param {(i: number) => number} size @param {number} budget
 */
export function packRanked(ranked, size, budget) {
  const chosen = [];
  let used = 0;
  for (const i of ranked) {
    const s = size(i);
    if (used + s <= budget) {
      chosen.push(i);
      used += s;
    }
  }
  return { chosen, chars: used };
}

/**
 * Keep-the-newest truncation: the newest whole turns whose characters fit `budget`.
 * @param {string[]} rendered every turn as the agent is sent it, oldest first @param {number} budget
 */
export function newestWithin(rendered, budget) {
  let used = 0;
  let first = rendered.length;
  while (first > 0) {
    const size = rendered[first - 1]?.length ?? 0;
    if (used + size > budget) break;
    used += size;
    first -= 1;
  }
  return { text: rendered.slice(first).join("\n"), chars: used, turns: rendered.length - first };
}

// Deterministic synthetic text (the same words, lengths and order on every run, from a seed), for
// the benchmark's conversations (bench/lib/conversation.mjs) and the chaos run (scripts/chaos.mjs)
// alike. The benchmark may import the scripts' library; a script never imports the benchmark.

/** @param {number} seed @returns {() => number} */
export function prng(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

const WORDS =
  "venue budget flights hotel schedule speaker agenda catering visa invoice deadline workshop keynote badge shuttle dinner lisbon porto berlin room projector wifi sponsor ticket refund".split(
    " ",
  );

/** @param {() => number} random @param {number} minChars @param {number} maxChars */
export function sentence(random, minChars, maxChars) {
  const target = minChars + Math.floor(random() * (maxChars - minChars));
  const words = [];
  let length = 0;
  while (length < target) {
    const word = WORDS[Math.floor(random() * WORDS.length)] ?? "plan";
    words.push(word);
    length += word.length + 1;
  }
  return `${words.join(" ")}.`;
}

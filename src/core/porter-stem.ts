/**
 * The Porter stemmer as the turn index applies it (FTS5's `porter` tokenizer over `unicode61`), so
 * that recall can count a query's words in a turn's indexed text exactly as the index matched them
 * (`turn-bm25`). The algorithm is M. F. Porter's (1980), with the two changes FTS5 makes to step 2
 * ("bli" → "ble" in place of "abli" → "able", and "logi" → "log"), and FTS5's reading of it:
 *
 * - it works on the token's UTF-8 bytes, so a letter outside ASCII is a consonant and counts by its
 *   bytes; a token of fewer than 3 or more than 64 bytes is left as it is;
 * - a rule whose suffix matches but whose condition fails ends its step (the longest suffix decides);
 * - a suffix must leave at least one byte before it;
 * - "contains a vowel" counts a `y` anywhere but first as a vowel.
 *
 * test/core/porter-stem.test.ts compares it with FTS5 itself (node:sqlite) on every word of the
 * bench's conversations.
 */

const MIN_BYTES = 3;
const MAX_BYTES = 64;

type Condition = (stem: string) => boolean;
type Rule = readonly [suffix: string, replacement: string, condition: Condition];

const isVowel = (c: string | undefined, yIsVowel: boolean): boolean =>
  c === "a" || c === "e" || c === "i" || c === "o" || c === "u" || (yIsVowel && c === "y");

/** Each letter of `word` is a consonant: `y` is one unless it follows a consonant. */
function consonants(word: string): boolean[] {
  const out: boolean[] = [];
  let previous = false;
  for (const c of word) {
    previous = !isVowel(c, previous);
    out.push(previous);
  }
  return out;
}

/** Porter's m: how many vowel-consonant sequences `stem` holds. */
export function measure(stem: string): number {
  let m = 0;
  let sawVowel = false;
  for (const consonant of consonants(stem)) {
    if (!consonant) sawVowel = true;
    else if (sawVowel) {
      m += 1;
      sawVowel = false;
    }
  }
  return m;
}

const mAbove0: Condition = (stem) => measure(stem) > 0;
const mAbove1: Condition = (stem) => measure(stem) > 1;
const always: Condition = () => true;
const hasVowel: Condition = (stem) => [...stem].some((c, i) => isVowel(c, i > 0));

/** *o: the stem ends consonant-vowel-consonant, the last not w, x or y. */
function endsCvc(stem: string): boolean {
  const last = stem.at(-1);
  if (last === "w" || last === "x" || last === "y") return false;
  const kinds = consonants(stem).slice(-3);
  return kinds.length === 3 && kinds[0] === true && kinds[1] === false && kinds[2] === true;
}

/** The first rule whose suffix `word` ends with (leaving a stem); its replacement if its condition holds. */
function apply(word: string, rules: readonly Rule[]): { word: string; applied: boolean } {
  for (const [suffix, replacement, condition] of rules) {
    if (word.length <= suffix.length || !word.endsWith(suffix)) continue;
    const stem = word.slice(0, -suffix.length);
    return condition(stem) ? { word: stem + replacement, applied: true } : { word, applied: false };
  }
  return { word, applied: false };
}

// "eed" is step1b's own: when its condition fails the step ends, and "ed" is not tried.
const STEP_1B: readonly Rule[] = [
  ["ed", "", hasVowel],
  ["ing", "", hasVowel],
];
const STEP_1B_RESTORE: readonly Rule[] = [
  ["at", "ate", always],
  ["bl", "ble", always],
  ["iz", "ize", always],
];
// Longer suffixes before those they end with ("ational" before "tional").
const STEP_2: readonly Rule[] = (
  [
    ["ational", "ate"],
    ["tional", "tion"],
    ["enci", "ence"],
    ["anci", "ance"],
    ["izer", "ize"],
    ["logi", "log"],
    ["bli", "ble"],
    ["alli", "al"],
    ["entli", "ent"],
    ["eli", "e"],
    ["ousli", "ous"],
    ["ization", "ize"],
    ["ation", "ate"],
    ["ator", "ate"],
    ["alism", "al"],
    ["iveness", "ive"],
    ["fulness", "ful"],
    ["ousness", "ous"],
    ["aliti", "al"],
    ["iviti", "ive"],
    ["biliti", "ble"],
  ] as const
).map(([suffix, replacement]) => [suffix, replacement, mAbove0] as const);
const STEP_3: readonly Rule[] = (
  [
    ["icate", "ic"],
    ["ative", ""],
    ["alize", "al"],
    ["iciti", "ic"],
    ["ical", "ic"],
    ["ful", ""],
    ["ness", ""],
  ] as const
).map(([suffix, replacement]) => [suffix, replacement, mAbove0] as const);
const STEP_4: readonly Rule[] = [
  ...["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent"].map((suffix) => [suffix, "", mAbove1] as const),
  ["ion", "", (stem: string) => (stem.endsWith("s") || stem.endsWith("t")) && mAbove1(stem)],
  ...["ou", "ism", "ate", "iti", "ous", "ive", "ize"].map((suffix) => [suffix, "", mAbove1] as const),
];

function step1a(word: string): string {
  if (!word.endsWith("s")) return word;
  if ((word.length > 4 && word.endsWith("sses")) || (word.length > 3 && word.endsWith("ies"))) return word.slice(0, -2);
  return word.endsWith("ss") ? word : word.slice(0, -1);
}

function step1b(word: string): string {
  if (word.length > 3 && word.endsWith("eed")) return mAbove0(word.slice(0, -3)) ? word.slice(0, -1) : word;
  const stripped = apply(word, STEP_1B);
  if (!stripped.applied) return stripped.word;
  const restored = apply(stripped.word, STEP_1B_RESTORE);
  if (restored.applied) return restored.word;
  const w = stripped.word;
  const last = w.at(-1);
  if (!isVowel(last, false) && last !== "l" && last !== "s" && last !== "z" && last === w.at(-2)) return w.slice(0, -1);
  return measure(w) === 1 && endsCvc(w) ? `${w}e` : w;
}

function step5(word: string): string {
  let w = word;
  if (w.endsWith("e")) {
    const stem = w.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsCvc(stem))) w = stem;
  }
  return w.endsWith("ll") && measure(w.slice(0, -1)) > 1 ? w.slice(0, -1) : w;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `token` (already lower-cased and folded by unicode61) as the index stores it. */
export function porterStem(token: string): string {
  const bytes = encoder.encode(token);
  if (bytes.length < MIN_BYTES || bytes.length > MAX_BYTES) return token;
  // One character per byte: ASCII letters stay themselves, every other byte is a consonant.
  let w = String.fromCharCode(...bytes);
  w = step1b(step1a(w));
  if (w.endsWith("y") && hasVowel(w.slice(0, -1))) w = `${w.slice(0, -1)}i`;
  w = apply(w, STEP_2).word;
  w = apply(w, STEP_3).word;
  w = apply(w, STEP_4).word;
  w = step5(w);
  return decoder.decode(Uint8Array.from(w, (c) => c.charCodeAt(0)));
}

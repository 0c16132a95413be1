/**
 * What the offline compactor reads in one sentence: the words that say what it is about, the values
 * it states (numbers, money, dates, times), who it names, and whether it records a decision, a
 * commitment or a preference. Plain string rules, no model: the same sentence always reads the same.
 */

/** Function words and chat filler: frequent everywhere, so they say nothing about this slice. */
const STOPWORDS = new Set(
  (
    "the and for are but not you all any can had her was one our out day get has him his how man new now old see two way who " +
    "boy did its let put say she too use that with have this will your from they know want been good much some time very when " +
    "come here just like long make many more only over such take than them well were what where which while would there their " +
    "these those then into also about after again against because before being below between both during each few further " +
    "once other same should own under until why yes yeah yep nope okay ok lol haha hah hehe hmm umm thanks thank thx pls " +
    "please sure cool nice great could might must shall does doing done having i'm i've i'd i'll you're you've you'll we're " +
    "we've they're it's that's there's what's let's don't doesn't didn't can't won't isn't aren't wasn't weren't haven't " +
    "hasn't hadn't wouldn't shouldn't couldn't hey hello bye goodbye morning evening night today tomorrow yesterday really " +
    "actually maybe still even just got going gonna wanna thing things stuff something anything nothing everything someone " +
    "anyone everyone lot lots bit kind sort able via per etc off too yet ever never always sometimes often"
  ).split(" "),
);

const MONTHS = "january february march april june july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec";
const WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday";
const CURRENCIES = "eur euro euros usd dollar dollars gbp pound pounds chf yen";
/** Words that announce a new value rather than say what it is about: "update: the offsite moved to May 3". */
const UPDATE_WORDS = new Set("update updated correction corrected change changed changes instead move moved moves rescheduled revised latest".split(" "));

/** Words that are values by themselves: a date or an amount without a digit in it. */
const VALUE_WORDS = new Set(`${MONTHS} ${WEEKDAYS} ${CURRENCIES}`.split(" "));

const WORD = /[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*/gu;
/** A token holding a digit: an amount, a time, a date, a count, a version (`1,200`, `10:30`, `2026-03-03`, `40k`, `€45`). */
const DIGIT_TOKEN = /[$€£¥]?\d[\p{L}\p{N}$€£¥%:.,/-]*/gu;
const HANDLE = /@[A-Za-z0-9_]{2,}/g;
/** "May" is a month only beside a day number; alone it is usually the verb. */
const MAY_DATE = /\b(?:may\s+\d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?may)\b/i;

const DECISION =
  /\b(?:we decided|decided|decision|let['’]s|let us|agreed|agree on|go(?:ing)? with|chose|chosen|settled on|final(?:ly|ized|ised)?|confirmed|approved|signed|booked|cancel(?:l?ed)?|moved to|postponed|switch(?:ed)? to)\b/i;
const COMMITMENT =
  /\b(?:i will|i['’]ll|we will|we['’]ll|i['’]m going to|i promise|will (?:send|do|draft|book|call|bring|pay|prepare|review|fix|handle)|assigned|owns|in charge|responsible for|deadline|due|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|next week|the end|end of|eod|eow|noon|the \d+))\b/i;
const PREFERENCE = /\b(?:prefers?|preferred|preference|favou?rite|allergic|vegetarian|vegan|can['’]t stand|hates?|loves?|dislikes?)\b/i;

/** Lower-cased words of three letters or more that are not stopwords. */
export function significantWords(text: string): string[] {
  const words: string[] = [];
  for (const match of text.matchAll(WORD)) {
    const word = match[0].toLowerCase().replaceAll("’", "'");
    if (word.length >= 3 && !STOPWORDS.has(word)) words.push(word);
  }
  return words;
}

/**
 * A light suffix strip so `invoice`, `invoices` and `invoicing` compare equal. Crude on purpose:
 * it only has to make one fact's wording meet another's, never to be a dictionary form.
 */
export function stem(word: string): string {
  const w = word.replace(/'s$/, "");
  for (const suffix of ["ing", "ed", "es", "s", "e"]) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 3) return w.slice(0, -suffix.length);
  }
  return w;
}

/** The values a text states, normalized so that the same value written the same way compares equal. */
export function valuesOf(text: string): Set<string> {
  const values = new Set<string>();
  for (const match of text.matchAll(DIGIT_TOKEN)) values.add(match[0].toLowerCase().replace(/[.,:/-]+$/, ""));
  for (const match of text.matchAll(WORD)) {
    const word = match[0].toLowerCase();
    if (VALUE_WORDS.has(word)) values.add(word);
  }
  if (MAY_DATE.test(text)) values.add("may");
  return values;
}

/**
 * Who a sentence names: @handles, and capitalized words inside it (the first word of a sentence is
 * capitalized anyway, so it counts only as a possessive: "Ada's flight"). Values are not names.
 */
function namesOf(sentence: string): Set<string> {
  const names = new Set<string>();
  for (const match of sentence.matchAll(HANDLE)) names.add(match[0].slice(1).toLowerCase());
  let first = true;
  for (const match of sentence.matchAll(WORD)) {
    const word = match[0];
    const lower = stem(word.toLowerCase().replaceAll("’", "'"));
    const initial = first;
    first = false;
    // "Q3", "B2B": a letter run glued to a digit belongs to a value, not a name.
    if (/^\d/.test(sentence.slice((match.index ?? 0) + word.length))) continue;
    if (!/^\p{Lu}/u.test(word) || word === "I" || VALUE_WORDS.has(word.toLowerCase())) continue;
    if (initial && !/['’]s$/.test(word)) continue;
    if (STOPWORDS.has(word.toLowerCase())) continue;
    names.add(lower);
  }
  return names;
}

/**
 * A number that names a thing rather than measures it ("invoice 1043", "room 12", "#88"): two
 * sentences about different invoices are different facts, not an update of one.
 */
const IDENTIFIER = /\b(invoice|order|ticket|issue|room|release|version|flight|table|gate|seat|platform|bus|case|step|phase|sprint|item|task|ref|reference|pr|no\.?|number)\s*#?\s*(\d[\p{L}\p{N}.-]*)|#(\d+)/giu;

function identifiersOf(sentence: string): string[] {
  // A sentence's closing mark is not part of the number: "invoice #88." names the invoice of "invoice 88 is paid".
  return [...sentence.matchAll(IDENTIFIER)].map((m) => (m[3] === undefined ? `${stem((m[1] ?? "").toLowerCase())} ${(m[2] ?? "").replace(/[.-]+$/, "")}` : `#${m[3]}`));
}

/** A sentence in the first person is about its speaker; any other is about what it names, or the group's. */
const FIRST_PERSON = /\b(?:i|i['’]m|i['’]ve|i['’]ll|i['’]d|me|my|mine)\b/i;

export interface Fact {
  /** Stemmed significant words that are neither a name nor a value: what the sentence is about. */
  readonly key: ReadonlySet<string>;
  /** Whom it is about: the names it mentions, else its speaker when it speaks of itself, else no one in particular. */
  readonly subjects: ReadonlySet<string>;
  readonly named: boolean;
  readonly values: ReadonlySet<string>;
  readonly decision: boolean;
  readonly commitment: boolean;
  readonly preference: boolean;
  readonly question: boolean;
}

/** `speaker` is the handle without its `@`, or "" when the line does not say who spoke. */
export function factOf(sentence: string, speaker: string): Fact {
  const values = valuesOf(sentence);
  const names = namesOf(sentence);
  for (const id of identifiersOf(sentence)) names.add(id);
  const key = new Set<string>();
  for (const word of significantWords(sentence)) {
    const s = stem(word);
    if (!names.has(s) && !values.has(word) && !VALUE_WORDS.has(word) && !UPDATE_WORDS.has(word)) key.add(s);
  }
  return {
    key,
    subjects: names.size > 0 ? names : new Set(speaker === "" || !FIRST_PERSON.test(sentence) ? [] : [speaker.toLowerCase()]),
    named: names.size > 0,
    values,
    decision: DECISION.test(sentence),
    commitment: COMMITMENT.test(sentence),
    preference: PREFERENCE.test(sentence),
    question: sentence.trimEnd().endsWith("?"),
  };
}

/** Whether a sentence states anything durable: a value, a name, a decision, a commitment or a preference. */
export function isSalient(fact: Fact): boolean {
  return fact.values.size > 0 || fact.named || fact.decision || fact.commitment || fact.preference;
}

/**
 * How much a sentence is worth keeping, before the slice's own vocabulary is counted: values and
 * decisions first (what later questions ask about), then commitments, names and preferences. A
 * question states no fact unless it carries a value; open questions are listed apart.
 */
export function salienceOf(fact: Fact): number {
  let score = 0;
  if (fact.values.size > 0) score += 3 + Math.min(fact.values.size - 1, 2) * 0.5;
  if (fact.decision) score += 2.5;
  if (fact.commitment) score += 2;
  if (fact.named) score += 1.5;
  if (fact.preference) score += 1.5;
  return fact.question ? score / 2 : score;
}

function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const x of a) if (b.has(x)) shared += 1;
  return shared / (a.size + b.size - shared);
}

const sameSet = (a: ReadonlySet<string>, b: ReadonlySet<string>): boolean => a.size === b.size && [...a].every((x) => b.has(x));

/** Key overlap at which two sentences about the same subjects state the same fact (its value may differ). */
const SAME_FACT = 0.6;
/** Without a value to compare, only a near-restatement counts as the same fact. */
const SAME_WORDING = 0.8;

/**
 * Whether two sentences state the same fact, so only the later one needs keeping: the same subjects,
 * and nearly the same words once names and values are set aside. Values may differ: that is an update.
 */
export function sameFact(a: Fact, b: Fact): boolean {
  if (!sameSet(a.subjects, b.subjects)) return false;
  if (a.question !== b.question) return false;
  const overlap = jaccard(a.key, b.key);
  return a.values.size > 0 || b.values.size > 0 ? overlap >= SAME_FACT : overlap >= SAME_WORDING && a.key.size > 0;
}

/** A page's vocabulary for `covers`: its stemmed words and its values. */
export interface PageVocabulary {
  readonly words: ReadonlySet<string>;
  readonly values: ReadonlySet<string>;
}

export function pageVocabulary(content: string): PageVocabulary {
  return { words: new Set([...significantWords(content).map(stem), ...namesOf(content)]), values: valuesOf(content) };
}

/**
 * Whether a memory page already holds a sentence's fact: every value it states, and two thirds of
 * what it is about and whom. A page with an older value does not cover the newer one.
 */
export function covers(page: PageVocabulary, fact: Fact): boolean {
  for (const value of fact.values) if (!page.values.has(value)) return false;
  const terms = [...fact.key, ...(fact.named ? fact.subjects : [])];
  if (terms.length < 2 && fact.values.size === 0) return false;
  const held = terms.filter((t) => page.words.has(t)).length;
  return held * 3 >= terms.length * 2;
}

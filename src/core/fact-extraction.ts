import { z } from "zod";
import { sha256Hex } from "./hash";
import { hasLineBreak, joinLines } from "./line-breaks";

/**
 * Durable facts of a settled frozen slice, for the agent's extracted memory pages (the memory
 * process the compactor's prompt points at). This module owns the shapes every extractor returns
 * and the offline extractor: deterministic rules over the slice's effective turns, so runs without
 * a model key still capture people, preferences, decisions, commitments, dates, plans, numbers,
 * places and open questions, each with the exact messages it came from.
 */

/** Every page extraction writes lives under this prefix of the agent's memory; nothing else writes there. */
export const EXTRACTED_PREFIX = "extracted/";

export const FACT_KINDS = ["people", "decisions", "commitments", "dates", "plans", "numbers", "places", "questions"] as const;
export type FactKind = (typeof FACT_KINDS)[number];

/** A fact's key and a page's last segment: lower-case words joined by `-`, safe in a memory path. */
export const factSlugSchema = z.string().regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/).max(48);

export const MAX_STATEMENT_CHARS = 400;

/** One effective turn of a settled slice, as extraction reads it. */
export const sliceTurnSchema = z.strictObject({
  messageId: z.string().min(1),
  seq: z.number().int().positive(),
  /** The hash of the log event the turn stands for (the source, or the delivered proposal). */
  eventHash: z.string().regex(/^[0-9a-f]{64}$/),
  role: z.enum(["user", "assistant"]),
  author: z.strictObject({ handle: z.string().min(1), name: z.string() }),
  text: z.string(),
});
export type SliceTurn = z.infer<typeof sliceTurnSchema>;

export const factSourceSchema = z.strictObject({
  messageId: z.string().min(1),
  seq: z.number().int().positive(),
  eventHash: z.string().regex(/^[0-9a-f]{64}$/),
});
export type FactSource = z.infer<typeof factSourceSchema>;

export const extractedFactSchema = z.strictObject({
  page: z.string().regex(new RegExp(`^extracted/(?:${FACT_KINDS.join("|")})/[a-z0-9]+(?:-[a-z0-9]+)*$`)).max(80),
  key: factSlugSchema.min(1),
  /** One line: the merge format and the agent's envelope both read statements as single lines. */
  statement: z.string().min(1).max(MAX_STATEMENT_CHARS).refine((s) => !hasLineBreak(s), "a statement is one line"),
  sources: z.array(factSourceSchema).min(1).max(16),
});
export type ExtractedFact = z.infer<typeof extractedFactSchema>;

/**
 * Letters that accent folding (NFKD, marks dropped) leaves outside a-z, as Latin: Cyrillic and
 * Greek, whose romanization is a letter-for-letter table, a few Latin letters that are not an
 * accented a-z (ß, ø, ł…), and the Arabic-Indic digits. Keys are lower case and already folded
 * (й is и once its breve is dropped, ά is α). Cyrillic hard and soft signs romanize to nothing.
 */
const LATIN_OF: ReadonlyMap<string, string> = new Map(
  Object.entries({
    а: "a", б: "b", в: "v", г: "g", д: "d", е: "e", ж: "zh", з: "z", и: "i", к: "k", л: "l", м: "m", н: "n", о: "o", п: "p", р: "r", с: "s", т: "t", у: "u", ф: "f", х: "kh", ц: "ts", ч: "ch", ш: "sh", щ: "shch", ъ: "", ы: "y", ь: "", э: "e", ю: "yu", я: "ya",
    і: "i", є: "ye", ґ: "g", ђ: "dj", ј: "j", љ: "lj", њ: "nj", ћ: "c", џ: "dz", ѕ: "dz",
    α: "a", β: "v", γ: "g", δ: "d", ε: "e", ζ: "z", η: "i", θ: "th", ι: "i", κ: "k", λ: "l", μ: "m", ν: "n", ξ: "x", ο: "o", π: "p", ρ: "r", σ: "s", ς: "s", τ: "t", υ: "y", φ: "f", χ: "ch", ψ: "ps", ω: "o",
    ß: "ss", æ: "ae", œ: "oe", ø: "o", đ: "d", ð: "d", þ: "th", ł: "l", ı: "i",
    ...Object.fromEntries([..."٠١٢٣٤٥٦٧٨٩", ..."۰۱۲۳۴۵۶۷۸۹"].map((digit, i) => [digit, String(i % 10)])),
  }),
);

const ASCII_WORD_CHAR = /^[a-z0-9]$/;
const MARK = /^\p{M}$/u;
const LETTER_OR_DIGIT = /^[\p{L}\p{N}]$/u;
const HAS_LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** One character (NFKC, lower case) as Latin, or undefined when no table covers it. */
function latinOf(char: string): string | undefined {
  const folded = char.normalize("NFKD").replace(/\p{M}+/gu, "");
  if (folded === "") return undefined;
  let latin = "";
  for (const c of folded) {
    const mapped = ASCII_WORD_CHAR.test(c) ? c : LATIN_OF.get(c);
    if (mapped === undefined) return undefined;
    latin += mapped;
  }
  return latin;
}

/**
 * A word of a script no table covers (Han, Arabic, Hebrew, Thai, Devanagari…): `u` and 10 hex
 * digits of its SHA-256 (40 bits), so two different words practically never share a slug. The
 * word keeps its marks: in Devanagari or Thai a vowel sign tells words apart.
 */
const hashWord = (word: string): string => `u${sha256Hex(word).slice(0, 10)}`;

/**
 * The words of `text` as slug words, in order: runs of letters and digits, each either
 * transliterated to a-z0-9 or, where no table covers its script, hashed whole. A run that changes
 * script mid-word ("iPhone15发布") is two words.
 */
function slugWords(text: string): string[] {
  const words: string[] = [];
  let latin = "";
  let other = "";
  const close = (): void => {
    if (latin !== "") words.push(latin);
    if (other !== "") words.push(hashWord(other));
    latin = "";
    other = "";
  };
  for (const char of text.normalize("NFKC").toLowerCase()) {
    if (MARK.test(char)) {
      // A mark belongs to the hashed word it is in; on a Latin letter it is an accent, folded away.
      if (other !== "") other += char;
      continue;
    }
    const asLatin = latinOf(char);
    if (asLatin !== undefined) {
      if (other !== "") close();
      latin += asLatin;
    } else if (LETTER_OR_DIGIT.test(char)) {
      if (latin !== "") close();
      other += char;
    } else {
      close();
    }
  }
  close();
  return words;
}

/**
 * Lower-case words joined by `-`, at most `maxWords` and 48 characters: a page's last segment or a
 * fact's key. ASCII text (accents folded) keeps its words, Cyrillic and Greek are transliterated,
 * other scripts become hash words (`slugWords`); "" only for text with no letter or digit at all.
 */
export function slugOf(text: string, maxWords = 6): string {
  const words = slugWords(text).slice(0, maxWords);
  let slug = "";
  for (const word of words) {
    const next = slug === "" ? word : `${slug}-${word}`;
    if (next.length > 48) break;
    slug = next;
  }
  if (slug === "") slug = words[0]?.slice(0, 48) ?? "";
  // A letter that NFKC turns into a bare mark or a symbol (rare compatibility characters) still names something.
  return slug === "" && HAS_LETTER_OR_DIGIT.test(text) ? hashWord(text.normalize("NFKC").toLowerCase()) : slug;
}

/** Whitespace (newlines included) collapsed, bounded: a statement is one line. */
export function oneLine(text: string, max = MAX_STATEMENT_CHARS): string {
  const line = joinLines(text).replace(/\s+/g, " ").trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

const sourceOf = (turn: SliceTurn): FactSource => ({ messageId: turn.messageId, seq: turn.seq, eventHash: turn.eventHash });

const MONTH = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
const WEEKDAY = "(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)";
const DATE = new RegExp(`\\b(?:${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?|\\d{1,2}(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH}|\\d{4}-\\d{2}-\\d{2}|${WEEKDAY}|tomorrow|next week)\\b`, "i");
const NUMBER = /(?:[$€£]\s?\d|\b\d+(?:[.,]\d+)?\s?(?:%|percent|euros?|dollars?|usd|eur|gbp|people|persons|guests|rooms|nights|days|hours|minutes|km|kg|m|cm|seats|tickets|k)\b)/i;
const PLACE = /\b(?:in|at|to|from|near|venue)\s+((?:[A-Z][\p{L}'-]+)(?:\s+[A-Z][\p{L}'-]+){0,2})/u;

/** Classifiers in priority order: the first that matches decides the sentence's page kind. */
const RULES: readonly { readonly kind: Exclude<FactKind, "people">; readonly test: (s: string) => boolean }[] = [
  { kind: "questions", test: (s) => s.endsWith("?") },
  { kind: "decisions", test: (s) => /\b(?:decided|decision|agreed|settled on|we(?:'ll| will) go with|going with|chose|picked|final answer|confirmed)\b/i.test(s) },
  { kind: "commitments", test: (s) => /\b(?:i(?:'ll| will)|we(?:'ll| will)|promise[sd]?|committed?|deadline|due (?:on|by)|will send|will book)\b/i.test(s) },
  { kind: "plans", test: (s) => /\b(?:plan(?:s|ned|ning)?|going to|schedul(?:e|ed|ing)|trip|offsite|meeting|itinerary)\b/i.test(s) },
  { kind: "dates", test: (s) => DATE.test(s) },
  { kind: "numbers", test: (s) => NUMBER.test(s) },
  { kind: "places", test: (s) => PLACE.test(s) },
];

const PREFERENCE = /\b(?:i|we)\s+(?:really\s+)?(?:prefer|like|love|hate|dislike|can't stand|enjoy|want|need|am allergic to|'m allergic to|am|'m)\s+(.+)/i;
const PREFERENCE_MARK = /\b(?:prefer|like|love|hate|dislike|can't stand|enjoy|allergic|vegetarian|vegan|favou?rite)\b/i;

/**
 * What a sentence is about: the subject before its verb of being or changing ("the offsite date
 * is…", "budget moved to…"), so a later sentence on the same subject supersedes it; otherwise its
 * first content words.
 */
const COPULA = /^(.{2,60}?)\s+(?:is|are|was|were|will be|has been|have been|moved to|moves to|changed to|changes to|is now|are now|now is|stays|remains)\b/i;
const LEADING = /^(?:(?:so|ok|okay|well|also|update|correction|actually|then|and|but|fyi|btw|note)\b[,:]?\s*)+/i;
/** "We decided that…", "I think…": the subject comes after them. */
const HEDGE = /^(?:(?:we|i)\s+(?:have\s+|all\s+)?(?:decided|agreed|confirmed|think|guess|believe|heard|noticed)\s+(?:that\s+|on\s+)?)/i;
const SUBJECT_NOISE = /^(?:the|our|my|your|their|his|her|a|an|this|that)\s+/i;
const TOPIC_STOP = new Set(
  "the a an and or but so of to in on at for with by from we i you it is are was were be will can could should would let lets let's our my your their this that these those what when where which who how do does did just also please ok okay yes no hey hi".split(" "),
);

export function topicOf(sentence: string): string {
  const body = sentence.replace(LEADING, "").replace(/^[^:]{1,24}:\s+/, "").replace(HEDGE, "").replace(LEADING, "");
  const copula = COPULA.exec(body);
  if (copula?.[1] !== undefined) {
    const subject = copula[1].replace(SUBJECT_NOISE, "").trim();
    // A pronoun or a question word ("when is the offsite?") names no subject: the words after it do.
    if (!/^(?:it|this|that|there|he|she|they|we|i|you|what|when|where|which|who|whom|whose|why|how)$/i.test(subject)) return slugOf(subject, 4);
  }
  const words = body
    .toLowerCase()
    .split(/[^\p{L}\p{N}']+/u)
    .filter((w) => w.length > 1 && !TOPIC_STOP.has(w));
  return slugOf(words.slice(0, 4).join(" "), 4);
}

/** Sentences of a turn: split after . ! ? and at line breaks, each one line. */
export function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => oneLine(s))
    .filter((s) => s.length >= 8);
}

const MAX_FACTS_PER_SLICE = 400;

/** `@handle (Name): sentence`, bounded. */
function attributed(turn: SliceTurn, sentence: string): string {
  const who = turn.author.name !== "" && turn.author.name !== turn.author.handle ? `@${turn.author.handle} (${oneLine(turn.author.name, 60)})` : `@${turn.author.handle}`;
  return oneLine(`${who}: ${sentence}`);
}

/**
 * The offline extractor: every person who spoke, each preference they stated, and each sentence
 * that holds a decision, commitment, plan, date, number, place or open question. Facts keep the
 * slice's order, so a later fact on the same page and key supersedes an earlier one on merge.
 */
export function extractFacts(turns: readonly SliceTurn[]): ExtractedFact[] {
  const facts: ExtractedFact[] = [];
  const people = new Set<string>();
  for (const turn of turns) {
    const person = slugOf(turn.author.handle);
    if (turn.role === "user" && person !== "" && !people.has(person)) {
      people.add(person);
      const name = turn.author.name === "" ? turn.author.handle : oneLine(turn.author.name, 120);
      facts.push({ page: `extracted/people/${person}`, key: "name", statement: oneLine(`@${turn.author.handle} is ${name}, a participant of this conversation.`), sources: [sourceOf(turn)] });
    }
    for (const sentence of sentencesOf(turn.text)) {
      const fact = factOf(turn, person, sentence);
      if (fact !== undefined) facts.push(fact);
      if (facts.length >= MAX_FACTS_PER_SLICE) return facts;
    }
  }
  return facts;
}

function factOf(turn: SliceTurn, person: string, sentence: string): ExtractedFact | undefined {
  if (turn.role === "user" && person !== "" && PREFERENCE_MARK.test(sentence)) {
    const object = PREFERENCE.exec(sentence)?.[1] ?? sentence;
    const topic = slugOf(object.replace(SUBJECT_NOISE, ""), 3);
    if (topic !== "") return { page: `extracted/people/${person}`, key: `preference-${topic}`.slice(0, 48).replace(/-+$/, ""), statement: attributed(turn, sentence), sources: [sourceOf(turn)] };
  }
  const rule = RULES.find((r) => r.test(sentence));
  if (rule === undefined) return undefined;
  const topic = topicOf(sentence);
  if (topic === "") return undefined;
  return { page: `extracted/${rule.kind}/${topic}`, key: topic, statement: attributed(turn, sentence), sources: [sourceOf(turn)] };
}

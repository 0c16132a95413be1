/**
 * Splitting a reply into Telegram messages. `sendMessage` refuses text longer than 4,096
 * characters ("Bad Request: message is too long"); Telegram counts UTF-16 code units closely
 * enough that the JavaScript string length is the measure used here.
 *
 * Each cut is made at the best boundary that fits: a paragraph break, else a line break, else the
 * end of a sentence, else a space, else a hard cut (never between the halves of a surrogate pair).
 * The whitespace at a cut is consumed — the part before it loses its trailing whitespace and the
 * part after it its leading blank lines (after a line break, so indentation survives) or leading
 * whitespace (after a sentence or a space) — and nothing else is: the parts, in order, are the
 * text's non-whitespace characters exactly, each once.
 */

export const TELEGRAM_MAX_MESSAGE_CHARS = 4_096;

type CutKind = "paragraph" | "line" | "sentence" | "space";

interface Boundary {
  readonly kind: CutKind;
  /** Matches a separator; `keep` of its characters stay at the end of the part before the cut. */
  readonly pattern: RegExp;
  readonly keep: number;
}

/** In order of preference. A blank line may hold spaces: it still reads as a paragraph break. */
const BOUNDARIES: readonly Boundary[] = [
  { kind: "paragraph", pattern: /\n[^\S\n]*\n/g, keep: 0 },
  { kind: "line", pattern: /\n/g, keep: 0 },
  // The punctuation stays with its sentence; only the space after it is consumed.
  { kind: "sentence", pattern: /[.!?] /g, keep: 1 },
  { kind: "space", pattern: / /g, keep: 0 },
];

interface Cut {
  /** The part is `rest.slice(0, end)` (before trimming); `end` ≤ the limit. */
  readonly end: number;
  /** The next part starts at `resume` (before its leading whitespace is consumed). */
  readonly resume: number;
  readonly kind: CutKind | "hard";
}

const isBlank = (text: string): boolean => text.trim() === "";

/**
 * The last separator of this kind whose part ends within the limit and at or after `minEnd`,
 * leaving a part with something other than whitespace in it.
 */
function lastBoundary(rest: string, limit: number, minEnd: number, boundary: Boundary): Cut | undefined {
  // A separator may start at the limit itself (its part is then exactly `limit` long), so the
  // window reaches a little past it; the longest separators (blank lines with spaces) may be missed
  // at the very edge, and a shorter boundary is found instead.
  const window = rest.slice(0, limit + 2);
  let found: Cut | undefined;
  for (const match of window.matchAll(boundary.pattern)) {
    const end = match.index + boundary.keep;
    if (end > limit) break;
    if (end >= minEnd && !isBlank(rest.slice(0, end))) found = { end, resume: match.index + match[0].length, kind: boundary.kind };
  }
  return found;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function hardCut(rest: string, limit: number): Cut {
  // Cutting between a high and a low surrogate would send two lone halves, which Telegram rejects
  // as invalid UTF-8; the pair moves whole to the next part.
  const splitsPair = isHighSurrogate(rest.charCodeAt(limit - 1)) && isLowSurrogate(rest.charCodeAt(limit));
  const end = splitsPair ? limit - 1 : limit;
  return { end, resume: end, kind: "hard" };
}

/**
 * Where to cut `rest` (longer than `limit`). A boundary in the second half of the window is
 * preferred by kind; failing that, any boundary by kind, so one long word after a short paragraph
 * still breaks at the paragraph rather than mid-word; failing that, a hard cut.
 */
function findCut(rest: string, limit: number): Cut {
  for (const minEnd of [Math.ceil(limit / 2), 1]) {
    for (const boundary of BOUNDARIES) {
      const cut = lastBoundary(rest, limit, minEnd, boundary);
      if (cut !== undefined) return cut;
    }
  }
  return hardCut(rest, limit);
}

/** The whitespace that opens the next part and is consumed with the cut. */
function leadingConsumed(rest: string, kind: Cut["kind"]): number {
  switch (kind) {
    case "paragraph":
    case "line":
      // Blank lines only: the next line's indentation is content (code, lists).
      return /^(?:[^\S\n]*\n)*/.exec(rest)?.[0].length ?? 0;
    case "sentence":
    case "space":
      return /^\s*/.exec(rest)?.[0].length ?? 0;
    case "hard":
      return 0;
  }
}

/**
 * The messages to send for `text`, in order: each non-blank and at most `limit` characters long.
 * A text that fits is returned unchanged as one part; a blank text is no message at all (Telegram
 * refuses empty text).
 */
export function splitMessage(text: string, limit: number = TELEGRAM_MAX_MESSAGE_CHARS): string[] {
  // Below two characters a surrogate pair could never fit, and no cut would make progress.
  if (!Number.isSafeInteger(limit) || limit < 2) throw new RangeError(`splitMessage: limit must be an integer of at least 2, got ${limit}`);
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const cut = findCut(rest, limit);
    const part = rest.slice(0, cut.end).trimEnd();
    // A hard cut through a run of whitespace longer than the limit yields a blank slice: it is
    // consumed, not sent.
    if (part !== "") parts.push(part);
    rest = rest.slice(cut.resume);
    rest = rest.slice(leadingConsumed(rest, cut.kind));
  }
  if (!isBlank(rest)) parts.push(rest);
  return parts;
}

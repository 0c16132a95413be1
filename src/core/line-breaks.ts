/**
 * The one set of line breaks every renderer of stored text honours. A reader that starts a new
 * line where we did not expect one can be shown an item we never wrote: a message reading
 * `note<NEL>[msg 77] Alice: …` would put a forged `[msg 77]` item at the margin of the memory
 * envelope. So the set is every character some reader treats as ending a line: LF, CR and CR LF;
 * Unicode's other mandatory breaks (VT, FF, NEL, the line and paragraph separators, UAX #14 class
 * BK); and the C0 information separators FS, GS and RS, which Python's `str.splitlines` (and so many
 * a model's tooling) breaks on too.
 *
 * No import: the shipped clients may use it without carrying zod.
 */
const BREAK_CHARS = "\\n\\u000B\\u000C\\r\\u001C-\\u001E\\u0085\\u2028\\u2029";

/** One line break: CR LF as one, else any single break character. */
const LINE_BREAK = new RegExp(`\\r\\n|[${BREAK_CHARS}]`, "gu");
/** Breaks with the white space around them, so one line is made without doubled spaces. */
const SPACED_BREAKS = new RegExp(`\\s*(?:\\r\\n|[${BREAK_CHARS}])[\\s${BREAK_CHARS}]*`, "gu");
const ANY_BREAK = new RegExp(`[${BREAK_CHARS}]`, "u");

/** True when the text holds any line break of the set. */
export const hasLineBreak = (text: string): boolean => ANY_BREAK.test(text);

/** The text's lines, split at every break of the set. */
export const splitLines = (text: string): string[] => text.split(LINE_BREAK);

/** Every break replaced by `replacement` (a break's surroundings kept as they are). */
export const replaceLineBreaks = (text: string, replacement: string): string => text.replace(LINE_BREAK, replacement);

/** The text on one line: each run of breaks, with the white space around it, becomes one space. */
export const joinLines = (text: string): string => text.replace(SPACED_BREAKS, " ");

/**
 * How a reader of rendered text finds its lines, written out here independently of
 * core/line-breaks.ts so a test of a renderer checks it against the readers, not against itself:
 * Python's `str.splitlines` (LF, CR, CR LF, VT, FF, FS, GS, RS, NEL, LS, PS), which is also the
 * union of Unicode's mandatory breaks (UAX #14 classes BK, CR, LF, NL) and the C0 separators.
 */
export const READER_BREAKS = ["\n", "\r\n", "\r", "\u000B", "\u000C", "\u001C", "\u001D", "\u001E", "\u0085", "\u2028", "\u2029"] as const;

export const readerLines = (text: string): string[] => text.split(/\r\n|[\n\r\u000B\u000C\u001C\u001D\u001E\u0085\u2028\u2029]/);

/** The lines of a rendered text that start at the margin with one of `openings`. */
export const marginLines = (text: string, openings: readonly string[]): string[] => readerLines(text).filter((line) => openings.some((o) => line.startsWith(o)));

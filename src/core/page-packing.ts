import { deflateRawSync, inflateRawSync } from "node:zlib";
import { MAX_MEMORY_PAGE_CHARS } from "./memory-path";

/**
 * An extracted page's text as its version row keeps it (migrations/shard/0037): packed, where it
 * was kept as text. A page is read whole or not at all (recall serves it, the inspector shows it,
 * its terms are computed from it in TypeScript), so no statement needs its text in SQL, and a
 * version's bytes were mostly its text: the page format repeats its heading, its line prefixes and
 * a source tag on every line.
 *
 * Format 1: the byte 0x01, then the text's UTF-8 as raw DEFLATE (RFC 1951) over a preset
 * dictionary of the page format's own words (core/fact-merge's heading, line prefixes and source
 * tag, and the paths of the fact kinds). A format's dictionary never changes: the bytes stored
 * with it must read back for ever, so another dictionary would be another format byte.
 */

const FORMAT_1 = 1;

// The words of core/fact-merge's page format, the most frequent last (DEFLATE reaches the end of a
// dictionary in the fewest bits). Frozen with format 1: test/core/page-packing.test.ts pins it.
const DICTIONARY_1 = new TextEncoder().encode(
  [
    "extracted/people/",
    "extracted/decisions/",
    "extracted/commitments/",
    "extracted/dates/",
    "extracted/plans/",
    "extracted/numbers/",
    "extracted/places/",
    "extracted/questions/",
    "  previously: @",
    " (msg , seq , ref )\n- ",
    "Extracted memory extracted/",
    ": facts taken from conversation history, newest value first.\n- ",
  ].join(""),
);

/**
 * The most bytes a page's text can take in UTF-8 (three a UTF-16 code unit): unpacking stops past
 * it, so a damaged or forged row cannot make a reader inflate without bound.
 */
const MAX_TEXT_BYTES = 3 * MAX_MEMORY_PAGE_CHARS;

/** A stored row that does not unpack to a page's text. */
export class PackedPageError extends Error {
  override readonly name = "PackedPageError";
}

/** The text, packed as format 1. */
export function packPage(text: string): Uint8Array {
  const body = deflateRawSync(new TextEncoder().encode(text), { dictionary: DICTIONARY_1, level: 9 });
  const packed = new Uint8Array(body.length + 1);
  packed[0] = FORMAT_1;
  packed.set(body, 1);
  return packed;
}

/** The text `packed` holds; throws PackedPageError for an unknown format, damaged bytes or text that is not UTF-8. */
export function unpackPage(packed: Uint8Array): string {
  if (packed[0] !== FORMAT_1) throw new PackedPageError(`a packed page starts with its format byte ${FORMAT_1}, not ${String(packed[0])}`);
  let bytes: Uint8Array;
  try {
    bytes = inflateRawSync(packed.subarray(1), { dictionary: DICTIONARY_1, maxOutputLength: MAX_TEXT_BYTES });
  } catch (error) {
    throw new PackedPageError(`a packed page does not inflate: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new PackedPageError("a packed page's text is not UTF-8");
  }
}

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_MEMORY_PAGE_CHARS } from "../../src/core/memory-path";
import { PackedPageError, packPage, unpackPage } from "../../src/core/page-packing";

/** A page in core/fact-merge's format, in two scripts. */
const PAGE = [
  "Extracted memory extracted/plans/lisbon-offsite: facts taken from conversation history, newest value first.",
  "- lisbon-offsite: @efua (Efua): the offsite moves to Lisbon, 12–14 May (msg 4411, seq 9120, ref 456833b2ca9e)",
  "  previously: @ben (Ben): the offsite is in Porto (msg 3170, seq 6512, ref e66d52623f3a)",
  "- 会场: @李华 (李华): 会场定在里斯本市中心 (msg 4420, seq 9141, ref 05a6d4ed40b0)",
].join("\n");

/**
 * PAGE as format 1 packed it when the format was made. Bytes stored are read for ever: if this
 * stops unpacking to PAGE, format 1's dictionary or framing changed under rows that use it.
 */
const PAGE_FORMAT_1 =
  "01c36332c45b3999c549f979baf96969c59925a914da866e98436a5a69a282866b5a69a2a695424946aa02544a2137bf2cb558a1245fc107ac4547c1d0e851c364431305dfc44a48189998181a42c2c9d2d0c800125626a66616c6c64946c98996a99a5c68419b949aa7a0e1949a87665366b142669e42407e51493ec4606343730388c166a68646108353cdcc524c8dcc8c8cd38c134111f264cfaca773765929383c9bdbf7b4b74f4103426b5a41659eae9bf574ce8a97ed3dcfa6ad7f3667cdd31d4d4f76ac7dbabf19e674230398d34d0c21361898269aa598a4a698182419680200";

const bytes = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));
const utf8 = (text: string): number => new TextEncoder().encode(text).length;

describe("packPage / unpackPage", () => {
  it("reads the bytes format 1 stored when it was made", () => {
    expect(unpackPage(bytes(PAGE_FORMAT_1))).toBe(PAGE);
  });

  it("gives back any text it packed, in any script, starting with its format byte", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 400 }), (text) => {
        const packed = packPage(text);
        expect(packed[0]).toBe(1);
        expect(unpackPage(packed)).toBe(text);
      }),
    );
    // A text that starts with a byte order mark keeps it: it is the text's, not the encoding's.
    expect(unpackPage(packPage("\ufeffhello"))).toBe("\ufeffhello");
  });

  it("keeps a page in its format in well under half its UTF-8 bytes (the dictionary holds the format's words)", () => {
    const packed = packPage(PAGE);
    expect(packed.length).toBeLessThan(0.6 * utf8(PAGE));
    // The format's words cost almost nothing: the heading and a tag add a few bytes, not their length.
    const heading = PAGE.split("\n")[0] ?? "";
    expect(packPage(heading).length).toBeLessThan(0.5 * utf8(heading));
  });

  it("refuses an unknown format byte, damaged or truncated bytes, text that is not UTF-8, and inflation past a page's size", () => {
    const packed = packPage(PAGE);
    const unknown = (() => {
      try {
        return unpackPage(Uint8Array.of(2, ...packed.subarray(1)));
      } catch (error) {
        return error;
      }
    })();
    expect(unknown).toBeInstanceOf(PackedPageError);
    expect(unknown).toMatchObject({ name: "PackedPageError", message: "a packed page starts with its format byte 1, not 2" });
    expect(() => unpackPage(Uint8Array.of(0))).toThrow(PackedPageError);
    expect(() => unpackPage(new Uint8Array())).toThrow(PackedPageError);
    expect(() => unpackPage(packed.subarray(0, packed.length - 8))).toThrow(/does not inflate/);
    expect(() => unpackPage(Uint8Array.of(1, 0xff, 0xff, 0xff))).toThrow(/does not inflate/);
    // A valid stream of bytes that are not UTF-8 (stored blocks: 0x01, length 2, its complement, the bytes).
    expect(() => unpackPage(Uint8Array.of(1, 0x01, 0x02, 0x00, 0xfd, 0xff, 0xc3, 0x28))).toThrow(/not UTF-8/);
    // A page at the size limit unpacks; a stream that inflates past what a page can be does not.
    const largest = "\u4e00".repeat(MAX_MEMORY_PAGE_CHARS);
    expect(unpackPage(packPage(largest))).toBe(largest);
    expect(() => unpackPage(packPage("a".repeat(3 * MAX_MEMORY_PAGE_CHARS + 1)))).toThrow(/does not inflate/);
  });
});

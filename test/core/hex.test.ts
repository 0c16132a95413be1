import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bytesOfHex, hexOf } from "../../src/core/hex";

describe("hex", () => {
  it("spells each byte as two lowercase digits, a leading zero kept", () => {
    expect(hexOf(new Uint8Array([0, 1, 15, 16, 171, 255]))).toBe("00010f10abff");
    expect(hexOf(new Uint8Array([]))).toBe("");
  });

  it("reads hex of either case back to its bytes", () => {
    expect([...bytesOfHex("00010f10abff")]).toEqual([0, 1, 15, 16, 171, 255]);
    expect([...bytesOfHex("ABFF0A")]).toEqual([171, 255, 10]);
    expect([...bytesOfHex("")]).toEqual([]);
    // A lone last digit is no byte.
    expect([...bytesOfHex("abf")]).toEqual([171]);
  });

  it("reads back what it spells, for any bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const hex = hexOf(bytes);
        expect(hex).toMatch(/^(?:[0-9a-f]{2})*$/);
        expect(hex.length).toBe(2 * bytes.length);
        expect([...bytesOfHex(hex)]).toEqual([...bytes]);
      }),
    );
  });
});

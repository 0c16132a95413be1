import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, hashCanonical, sha256Hex } from "../../src/core/hash";

/** A double from its IEEE-754 bit pattern, as RFC 8785 Appendix B lists its vectors. */
function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe("canonicalJson (RFC 8785)", () => {
  it("matches the RFC's §3.2.2 example", () => {
    const input: unknown = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
        '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        '"literals":[null,true,false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts keys by UTF-16 code units (the RFC's §3.2.3 example)", () => {
    const input = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    };
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it("sorts nested keys and drops insignificant whitespace", () => {
    expect(canonicalJson({ b: [{ z: 1, a: 2 }], a: { y: null, x: "s" } })).toBe('{"a":{"x":"s","y":null},"b":[{"a":2,"z":1}]}');
    expect(canonicalJson(JSON.parse(' { "b" : 1 ,\n "a" : [ 1 , 2 ] } '))).toBe('{"a":[1,2],"b":1}');
  });

  it.each([
    ["0000000000000000", "0"],
    ["8000000000000000", "0"], // -0
    ["0000000000000001", "5e-324"],
    ["8000000000000001", "-5e-324"],
    ["7fefffffffffffff", "1.7976931348623157e+308"],
    ["ffefffffffffffff", "-1.7976931348623157e+308"],
    ["4340000000000000", "9007199254740992"],
    ["c340000000000000", "-9007199254740992"],
    ["4430000000000000", "295147905179352830000"],
    ["44b52d02c7e14af5", "9.999999999999997e+22"],
    ["44b52d02c7e14af6", "1e+23"],
    ["44b52d02c7e14af7", "1.0000000000000001e+23"],
    ["444b1ae4d6e2ef4e", "999999999999999700000"],
    ["444b1ae4d6e2ef4f", "999999999999999900000"],
    ["444b1ae4d6e2ef50", "1e+21"],
    ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
    ["3eb0c6f7a0b5ed8d", "0.000001"],
    ["41b3de4355555553", "333333333.3333332"],
    ["41b3de4355555554", "333333333.33333325"],
    ["41b3de4355555555", "333333333.3333333"],
    ["41b3de4355555556", "333333333.3333334"],
    ["41b3de4355555557", "333333333.33333343"],
    ["becbf647612f3696", "-0.0000033333333333333333"],
    ["43143ff3c1cb0959", "1424953923781206.2"],
  ])("formats the double 0x%s as %s (Appendix B)", (bits, text) => {
    expect(canonicalJson(fromBits(bits))).toBe(text);
    expect(canonicalJson([fromBits(bits)])).toBe(`[${text}]`);
  });

  it.each([
    [1e21, "1e+21"],
    [1e20, "100000000000000000000"],
    [0.1, "0.1"],
    [-0, "0"],
    [1e-7, "1e-7"],
    [1.5, "1.5"],
  ])("formats %d as %s", (value, text) => {
    expect(canonicalJson({ n: value })).toBe(`{"n":${text}}`);
  });

  it("escapes only what JSON requires, with lower-case hex", () => {
    expect(canonicalJson("\u0000\u001f\u007f\u2028 \"\\ é 😀")).toBe('"\\u0000\\u001f\u007f\u2028 \\"\\\\ é 😀"');
    expect(canonicalJson("\b\f\n\r\t")).toBe('"\\b\\f\\n\\r\\t"');
  });

  it.each<[string, unknown]>([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a nested -Infinity", { a: [Number.NEGATIVE_INFINITY] }],
    ["undefined", undefined],
    ["a lone surrogate", "\ud800"],
  ])("refuses a value with no canonical form: %s", (_name, value) => {
    expect(() => canonicalJson(value)).toThrow();
  });

  it("is invariant under key order and agrees with JSON for any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        const reversed: unknown = JSON.parse(JSON.stringify(value), (_key, v: unknown) =>
          v !== null && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).reverse()) : v,
        );
        expect(canonicalJson(reversed)).toBe(text);
      }),
      { numRuns: 150 },
    );
  });
});

describe("sha256Hex", () => {
  it.each([
    ["abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    ["", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    [
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ],
  ])("hashes %j", (input, digest) => {
    expect(sha256Hex(input)).toBe(digest);
  });

  it("hashes the UTF-8 bytes of the text", () => {
    // "é" is C3 A9 in UTF-8; as Latin-1 (E9) it would hash to de2e331d….
    expect(sha256Hex("é")).toBe("4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c");
  });

  it("hashCanonical is sha256Hex of canonicalJson", () => {
    expect(hashCanonical({ b: 2, a: 1 })).toBe(sha256Hex('{"a":1,"b":2}'));
    expect(hashCanonical({ a: 1, b: 2 })).toBe(hashCanonical({ b: 2, a: 1 }));
    expect(hashCanonical({ a: 1 })).not.toBe(hashCanonical({ a: "1" }));
  });
});

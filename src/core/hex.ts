/**
 * Bytes as hex and back, as the service spells them wherever it does: a SQLite BLOB bound or read as
 * text (`hex()`, `unhex()`), an HMAC in a header, a cursor a client carries. Two digits a byte,
 * lowercase out; either case in.
 */

/** `bytes` as lowercase hex, two digits each. */
export const hexOf = (bytes: Uint8Array): string => Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");

/** The bytes `hex` spells; its caller has checked that it is hex digits, two a byte (a lone last digit is dropped). */
export const bytesOfHex = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));

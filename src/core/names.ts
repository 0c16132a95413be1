import { z } from "zod";
import { typedIssue } from "./errors";
import { hasUnsafeChars, UNSAFE } from "./unsafe-chars";

/**
 * Names and ids that reach a screen or a model. Message text stays exactly as sent; a name is the
 * one field a participant chooses that Foldline itself prints in front of text (`Ada: …`,
 * `[73] @ada (user): …`), so a name that holds a line break, a bidi override or an invisible
 * character could forge a speaker line or hide what it says. Ids are refused when they hold such
 * characters; names are stored as sent and normalized wherever they are rendered.
 */

export { hasUnsafeChars };

/** The characters of `UNSAFE` (core/unsafe-chars.ts, which `hasUnsafeChars` tests), every one of them. */
const UNSAFE_GLOBAL = new RegExp(UNSAFE.source, "gu");
/** Characters that become a space rather than vanish: they separated words where they stood. */
const SPACING = /[\u0009-\u000D\u0085\u2028\u2029]/gu;

/** The longest name rendered; a longer one is cut on a code point with an ellipsis. */
export const MAX_RENDERED_NAME = 64;

export const UNSAFE_MESSAGE = "holds a control, bidi or invisible character (refused in ids; names are normalized where rendered)";

/**
 * A string schema for an id a client supplies: one with an unsafe character is refused first, as
 * `unsafe_characters` (422), before any format check of its own.
 */
export function safeIdString(): z.ZodString {
  return z.string().refine((value) => !hasUnsafeChars(value), { message: UNSAFE_MESSAGE, abort: true, ...typedIssue("unsafe_characters") });
}

/**
 * A name as it may be printed in front of someone's text: one line, no controls, no bidi or
 * invisible characters, whitespace runs folded to one space, at most `MAX_RENDERED_NAME` code
 * points. Returns `undefined` when nothing printable is left, so the caller falls back to an id.
 */
export function displayName(raw: string): string | undefined {
  const folded = raw.replace(SPACING, " ").replace(UNSAFE_GLOBAL, "").replace(/\s+/gu, " ").trim();
  if (folded === "") return undefined;
  const points = [...folded];
  return points.length <= MAX_RENDERED_NAME ? folded : `${points.slice(0, MAX_RENDERED_NAME - 1).join("").trimEnd()}…`;
}

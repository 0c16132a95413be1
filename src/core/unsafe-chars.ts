/**
 * The characters that make an id unsafe to render (core/names.ts says why). Its own module, with no
 * import, because the shipped grammY plugin (`foldline/grammy`) drops unsafe Telegram file ids
 * exactly as the webhook does (core/telegram-message.ts) and cannot carry zod, which names.ts needs.
 *
 * C0 and C1 controls (line breaks and NUL among them), DEL, the Unicode line and paragraph
 * separators, the bidi embedding/override/isolate controls and marks, and the zero-width
 * characters (space, non-joiner, joiner, word joiner, BOM).
 */
export const UNSAFE = /[\u0000-\u001F\u007F-\u009F\u061C\u200B-\u200F\u2028-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/u;

/** True when an id holds a character that could forge or hide text where it is rendered. */
export function hasUnsafeChars(value: string): boolean {
  return UNSAFE.test(value);
}

/**
 * What an operator may read about a conversation: codes, ids, counts and times, never a word a
 * counterpart wrote. Incident messages are served across tenants to a token whose only scope is
 * `ops` (`GET /v1/ops/incidents`), so a bot's error page quoting the user, a provider's error
 * echoing the prompt or Telegram's description of a chat must not reach them: such text goes to the
 * incident's `detail`, which only a token for the conversation reads.
 *
 * `OpsText` is made only by the `opsText` template, whose every interpolated value must be a
 * finite number or one token of ids and codes (`A-Z a-z 0-9 _ . : @ / # = + -`, at most 160
 * characters); anything else, a sentence, a word in another script, a line break, is shown as
 * `(withheld)`. So a template that interpolates a counterpart's text by mistake leaks at most one
 * ASCII word, and only if the text was exactly that.
 */

declare const opsTextBrand: unique symbol;
export type OpsText = string & { readonly [opsTextBrand]: true };

const TOKEN = /^[A-Za-z0-9_.:@/#=+-]{1,160}$/;
export const WITHHELD = "(withheld)";

const shown = (value: string | number): string => {
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : WITHHELD;
  return TOKEN.test(value) ? value : WITHHELD;
};

export function opsText(parts: TemplateStringsArray, ...values: readonly (string | number)[]): OpsText {
  let text = parts[0] ?? "";
  values.forEach((value, i) => {
    text += shown(value) + (parts[i + 1] ?? "");
  });
  return text as OpsText;
}

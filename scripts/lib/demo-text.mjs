// Text helpers of `npm run demo`'s report: plain words wrapped to a width, and what the kinds of
// event that preflight does not check are called in it.

/** What the kinds of event that preflight does not check are, as the demo's notes name them. */
export const UNCHECKED = /** @type {Record<string, string>} */ ({ proposal: "reply", delivery: "delivery receipt", edit: "edit", delete: "deletion" });

/**
 * Words of `text` in lines of at most `width` characters (a longer word stands alone).
 * @param {string} text @param {number} width
 */
export function wrap(text, width) {
  const lines = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return line === "" ? lines : [...lines, line];
}

import type { EventInput } from "./events";
import { foldSearchText, searchForm } from "./search-text";

/**
 * What the turn index (`turn_terms`, migrations/shard/0023) holds for one event of the log: the
 * folded text and grams of every event that carries a text, each a row of its own, written with the
 * event and never changed. Which row is a message's current text, and whether the message is live,
 * the fold in `turns` says; the index only has to hold every text a turn ever had.
 *
 * The author column holds the name a reader would search for, folded as the text is: a source's
 * author's name (else username, else id), a reply's agent id. An edit's row takes its message's
 * author as the index knows it when the edit is written (`author` undefined here): an edit may
 * arrive before its message, and then has no author.
 */
export interface EventTerms {
  readonly kind: "source" | "edit" | "proposal";
  /** The folded author, or undefined for an edit (its message's, read by the statement). */
  readonly author: string | undefined;
  /** The event's text as written, and folded (`searchForm`) with its grams. */
  readonly raw: string;
  readonly text: string;
  readonly grams: string;
  /** The message an edit changes, or the source's own message id; undefined for a proposal. */
  readonly messageId: string | undefined;
  /**
   * A source's folded author when folding changed the name: `turns.author_terms`, which an edit
   * of the message reads (SQL cannot fold). Undefined when the name is its own folded form.
   */
  readonly authorTerms: string | undefined;
}

/** The name a reader searches a source's author by: what `turns` keeps as `author_name`, else the id. */
const authorName = (author: { readonly id: string; readonly name?: string | undefined; readonly username?: string | undefined }): string =>
  author.name ?? author.username ?? author.id;

/** The index row of `event`, or undefined for an event with no text (a run, a delivery, a deletion). */
export function eventTerms(event: EventInput): EventTerms | undefined {
  switch (event.kind) {
    case "source": {
      const name = authorName(event.body.author);
      const folded = foldSearchText(name);
      return { kind: "source", author: folded, raw: event.body.text, ...searchForm(event.body.text), messageId: event.body.messageId, authorTerms: folded === name ? undefined : folded };
    }
    case "correction":
      return event.body.action === "edit"
        ? { kind: "edit", author: undefined, raw: event.body.text, ...searchForm(event.body.text), messageId: event.body.targetMessageId, authorTerms: undefined }
        : undefined;
    case "proposal":
      return { kind: "proposal", author: foldSearchText(event.body.agentId), raw: event.body.text, ...searchForm(event.body.text), messageId: undefined, authorTerms: undefined };
    case "run":
    case "delivery":
      return undefined;
  }
}

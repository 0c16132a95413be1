import { z } from "zod";
import { agentIdSchema } from "../core/events";
import { recallQueryTextSchema } from "../core/recall";

/**
 * Query shapes shared by the HTTP routes and the RPC entrypoint. HTTP hands over its query string
 * (every value a string, hence the coercion); RPC hands over the caller's object as is.
 */

/** A cursor page: `after` is the last key already read (0 from the start), `limit` at most 500. */
export const pageQuery = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/** Routes about one agent's view of a conversation (context, chain, verify). */
export const agentQuery = z.object({ agent: agentIdSchema });

/**
 * A page of the chain listing (`listChain`): `after` is the id of the last boundary already
 * listed (absent: from the oldest), `limit` how many to list.
 */
export const chainListQuery = agentQuery.extend({
  after: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(100),
});

/** `GET …/context`: the agent, and an optional query that adds the memory envelope. */
export const contextQuery = agentQuery.extend({ query: recallQueryTextSchema.optional() });

/**
 * A page of one epoch's audited links (`verifyLinks`): `after` is the last position already read,
 * `epoch` defaults to the agent's current epoch. Each link costs a packet read and its slice of the
 * log, so a page is small.
 */
export const linkPageQuery = agentQuery.extend({
  epoch: z.string().min(1).max(200).optional(),
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(50).default(10),
});

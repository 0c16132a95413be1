import type { FactCursor } from "../../storage/shard/conversation-memory";

/**
 * The inspector's own URLs, built in one place so every link escapes its ids the same way.
 * Conversation ids contain `:`, which is encoded here and decoded by the router.
 */

export const INSPECTOR_ROOT = "/inspector";
export const LOGIN_PATH = `${INSPECTOR_ROOT}/login`;
export const LOGOUT_PATH = `${INSPECTOR_ROOT}/logout`;

function withQuery(path: string, query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === "" ? path : `${path}?${text}`;
}

export const conversationListPath = (query: { after?: string | undefined; limit?: number | undefined } = {}): string => withQuery(INSPECTOR_ROOT, query);

export interface ConversationPageQuery {
  readonly agent?: string | undefined;
  readonly before?: number | undefined;
  readonly runsBefore?: number | undefined;
  readonly memory?: FactCursor | undefined;
}

export const conversationPath = (conversationId: string, { memory, ...query }: ConversationPageQuery = {}): string =>
  withQuery(`${INSPECTOR_ROOT}/conversations/${encodeURIComponent(conversationId)}`, { ...query, memory: memory === undefined ? undefined : `${memory.path}:${memory.factKey}` });

/**
 * The memory section's cursor as the URL carries it, `<path>:<fact key>`: neither a memory path's
 * segments (`[A-Za-z0-9._-]`) nor a fact's slug holds a `:`, so the first one splits them.
 */
export function parseFactCursor(text: string): FactCursor | undefined {
  const match = /^([A-Za-z0-9._/-]{1,200}):([a-z0-9-]{1,64})$/.exec(text);
  return match?.[1] === undefined || match[2] === undefined ? undefined : { path: match[1], factKey: match[2] };
}

export const boundaryJsonPath = (conversationId: string, boundaryId: string): string =>
  `${INSPECTOR_ROOT}/conversations/${encodeURIComponent(conversationId)}/boundaries/${encodeURIComponent(boundaryId)}.json`;

export const packetJsonPath = (conversationId: string, boundaryId: string): string =>
  `${INSPECTOR_ROOT}/conversations/${encodeURIComponent(conversationId)}/boundaries/${encodeURIComponent(boundaryId)}/packet.json`;

const FLEET_PATH = `${INSPECTOR_ROOT}/fleet`;

export const fleetPath = (query: { hours?: number | undefined } = {}): string => withQuery(FLEET_PATH, query);

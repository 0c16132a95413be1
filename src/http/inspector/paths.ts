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

export const conversationPath = (conversationId: string, query: { agent?: string | undefined; before?: number | undefined; runsBefore?: number | undefined } = {}): string =>
  withQuery(`${INSPECTOR_ROOT}/conversations/${encodeURIComponent(conversationId)}`, query);

export const boundaryJsonPath = (conversationId: string, boundaryId: string): string =>
  `${INSPECTOR_ROOT}/conversations/${encodeURIComponent(conversationId)}/boundaries/${encodeURIComponent(boundaryId)}.json`;

export const packetJsonPath = (conversationId: string, boundaryId: string): string =>
  `${INSPECTOR_ROOT}/conversations/${encodeURIComponent(conversationId)}/boundaries/${encodeURIComponent(boundaryId)}/packet.json`;

const FLEET_PATH = `${INSPECTOR_ROOT}/fleet`;

export const fleetPath = (query: { hours?: number | undefined } = {}): string => withQuery(FLEET_PATH, query);

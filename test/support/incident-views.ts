import { expect } from "vitest";
import { call, json, tokenFor } from "../integration/helpers";

interface Listed {
  readonly kind: string;
  readonly code: string;
  readonly message: string;
  readonly detail?: string | null;
}

/**
 * The two views of an agent's incidents, checked for a planted marker that a counterpart (a bot, a
 * provider, Telegram) said: the operator's fleet view (a token whose only scope is `ops`) holds no
 * byte of it, in any field; the conversation's own incident rows keep it, as `detail`, never in
 * `message`. Returns the conversation's incidents, for the caller's own checks.
 */
export async function expectCounterpartTextPrivate(conversation: string, token: string, agentId: string, marker: string): Promise<Listed[]> {
  const fleet = await call("GET", `/v1/ops/incidents?agent=${encodeURIComponent(agentId)}`, { token: await tokenFor("ops") });
  const raw = await fleet.text();
  expect(fleet.status, raw).toBe(200);
  const listed = (JSON.parse(raw) as { incidents: Listed[] }).incidents;
  expect(listed.length).toBeGreaterThan(0);
  expect(raw).not.toContain(marker);
  for (const incident of listed) expect(incident).not.toHaveProperty("detail");

  const own = await json<{ incidents: Listed[] }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/incidents`, { token }));
  expect(own.incidents.some((i) => (i.detail ?? "").includes(marker))).toBe(true);
  expect(own.incidents.filter((i) => i.message.includes(marker))).toEqual([]);
  return own.incidents;
}

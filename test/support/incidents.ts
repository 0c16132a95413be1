import { shardOf } from "./shards";

/** What a test reads of a conversation's incident rows: who, which kind and code, how often, and whether still open. */
export interface IncidentRow {
  agent_id: string;
  run_id: string | null;
  kind: string;
  code: string;
  count: number;
  open: number;
}

/** The conversation's incident rows on its shard, oldest first. */
export async function incidentRows(conversation: string): Promise<IncidentRow[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT agent_id, run_id, kind, code, count, open FROM incidents WHERE conversation_id = ? ORDER BY id")
    .bind(conversation)
    .all<IncidentRow>();
  return results;
}

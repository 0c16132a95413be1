/** Epoch activations: the frontier each chain of a conversation started from, written once. */

export interface Activation {
  readonly frontierId: string;
  readonly frontierHash: string;
  readonly startSeq: number;
  readonly activatingSeq: number;
}

export async function readActivation(db: D1Database, conversationId: string, agentId: string, epochId: string): Promise<Activation | undefined> {
  const row = await db
    .prepare("SELECT frontier_id, frontier_hash, start_seq, activating_seq FROM activations WHERE conversation_id = ? AND agent_id = ? AND epoch_id = ?")
    .bind(conversationId, agentId, epochId)
    .first<{ frontier_id: string; frontier_hash: string; start_seq: number; activating_seq: number }>();
  return row === null
    ? undefined
    : { frontierId: row.frontier_id, frontierHash: row.frontier_hash, startSeq: row.start_seq, activatingSeq: row.activating_seq };
}

export async function insertActivation(db: D1Database, conversationId: string, agentId: string, epochId: string, activation: Activation, now: string): Promise<void> {
  await db
    .prepare(
      `INSERT INTO activations (conversation_id, agent_id, epoch_id, frontier_id, frontier_hash, start_seq, activating_seq, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    )
    .bind(conversationId, agentId, epochId, activation.frontierId, activation.frontierHash, activation.startSeq, activation.activatingSeq, now)
    .run();
}

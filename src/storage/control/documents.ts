/** The index of trusted identity/memory documents an agent uploaded (their bytes are in R2, `storage/r2/documents`). */

export async function documentExists(db: D1Database, agentId: string, name: string, hash: string): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS present FROM documents WHERE agent_id = ? AND name = ? AND hash = ?")
    .bind(agentId, name, hash)
    .first<{ present: number }>();
  return row !== null;
}

export async function insertDocument(db: D1Database, agentId: string, name: string, hash: string, r2Key: string, chars: number, now: string): Promise<void> {
  await db
    .prepare("INSERT OR IGNORE INTO documents (agent_id, name, hash, r2_key, chars, created_at) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(agentId, name, hash, r2Key, chars, now)
    .run();
}

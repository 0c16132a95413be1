// What the log's guarantees alone take: the run's log spelled again as small as each guarantee
// allows, in a database of its own, measured with SQLite's `dbstat` like the service's own bytes
// (lib/d1-parts.mjs). Each event keeps what the service promises of it: its sequence, its kind, its
// idempotency key (unique in its conversation), its sensitivity, its time, its 32-byte hash (which
// tells an altered body from the one stored), its body; and the log keeps the lookups the service
// reads it by (a source by its message id, a correction by its target, a reply by its proposal and
// the message it answers, a run by its chain anchor). What the spelling gives up is only bytes a
// reader can restore: the kind as a small integer, a source's author as a number of a table of
// authors, a source's body as an array of values, with no field names.

import { hasTable, localD1Files } from "./d1-parts.mjs";

const SCHEMA = `
CREATE TABLE authors (id INTEGER PRIMARY KEY, author TEXT NOT NULL UNIQUE);
CREATE TABLE log (
  conversation INTEGER NOT NULL, seq INTEGER NOT NULL, kind INTEGER NOT NULL, idempotency_key TEXT NOT NULL,
  sensitive INTEGER NOT NULL, body TEXT NOT NULL, hash BLOB, recorded_at INTEGER NOT NULL,
  PRIMARY KEY (conversation, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX log_by_key ON log (conversation, idempotency_key);
CREATE INDEX log_source_by_message ON log (conversation, json_extract(body, '$[1]')) WHERE kind = 1;
CREATE INDEX log_by_proposal ON log (conversation, json_extract(body, '$.proposalId')) WHERE kind IN (3, 4);
CREATE INDEX log_proposal_by_reply ON log (conversation, json_extract(body, '$.replyToMessageId')) WHERE kind = 3;
CREATE INDEX log_correction_by_target ON log (conversation, json_extract(body, '$.targetMessageId')) WHERE kind = 5;
CREATE UNIQUE INDEX log_chain_anchor ON log (conversation, json_extract(body, '$.anchor.epochId'), json_extract(body, '$.anchor.position'))
  WHERE kind = 2 AND json_extract(body, '$.anchor.epochId') IS NOT NULL;`;

const KINDS = /** @type {Record<string, number>} */ ({ source: 1, run: 2, proposal: 3, delivery: 4, correction: 5 });

/**
 * A source's body as an array: its author's number, its message id, its text, then its other values
 * (time sent, chat type, the message it replies to, attachments), from either spelling the log keeps.
 * @param {any} body @param {(author: string) => number} authorRef
 */
function sourceArray(body, authorRef) {
  if (Array.isArray(body.a)) {
    const [id, name, username, ...rest] = body.a;
    return [authorRef(JSON.stringify([id, name, username])), body.messageId, body.text, ...rest];
  }
  const { author, messageId, text, ...rest } = body;
  return [authorRef(JSON.stringify([author?.id, author?.name, author?.username])), messageId, text, ...Object.values(rest)];
}

/**
 * The bytes the log's events take spelled small (`SCHEMA`), less the empty schema's pages, with and
 * without what two guarantees cost: each event's hash, and one skipped run per source and compactor.
 * @param {{ seq: number, kind: string, idempotency_key: string, sensitive: number, body: string, text: string | null, hash: Uint8Array, recorded_at: number, conversation_key: number }[]} rows
 */
async function respelled(rows) {
  const { DatabaseSync } = await import("node:sqlite");
  /** @param {{ hashes: boolean, skippedRuns: boolean }} keep */
  const build = (keep) => {
    const db = new DatabaseSync(":memory:");
    db.exec(SCHEMA);
    const authors = db.prepare("INSERT INTO authors (author) VALUES (?) ON CONFLICT (author) DO UPDATE SET author = excluded.author RETURNING id");
    const insert = db.prepare("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    const authorRef = (/** @type {string} */ author) => Number(/** @type {{ id: number }} */ (authors.get(author)).id);
    const bytes = () => Number(/** @type {{ b: number }} */ (db.prepare("SELECT SUM(pgsize) AS b FROM dbstat").get()).b);
    const empty = bytes();
    db.exec("BEGIN");
    for (const row of rows) {
      const parsed = JSON.parse(row.body);
      const body = row.text === null ? parsed : { ...parsed, text: row.text };
      const skipped = row.kind === "run" && (Array.isArray(body) || body?.status === "skipped");
      if (skipped && !keep.skippedRuns) continue;
      const spelled = row.kind === "source" ? JSON.stringify(sourceArray(body, authorRef)) : JSON.stringify(body);
      insert.run(row.conversation_key, row.seq, KINDS[row.kind] ?? 0, row.idempotency_key, row.sensitive, spelled, keep.hashes ? row.hash : null, row.recorded_at);
    }
    db.exec("COMMIT");
    const total = bytes() - empty;
    db.close();
    return total;
  };
  const bytes = build({ hashes: true, skippedRuns: true });
  return { bytes, hashes: bytes - build({ hashes: false, skippedRuns: true }), skippedRuns: bytes - build({ hashes: true, skippedRuns: false }) };
}

/**
 * The floor the log's guarantees set for the log every database under `persistDir` holds: its
 * bytes spelled small, and of them what the events' hashes and the skipped runs take.
 * @param {string} persistDir
 * @returns {Promise<{ events: number, bytes: number, hashes: number, skippedRuns: number }>}
 */
export async function logFloor(persistDir) {
  const { DatabaseSync } = await import("node:sqlite");
  // Each database's log on its own (each numbers its conversations from 1), summed.
  const floor = { events: 0, bytes: 0, hashes: 0, skippedRuns: 0 };
  for (const file of localD1Files(persistDir)) {
    /** @type {any[]} */
    let rows = [];
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      if (!hasTable(db, "log")) continue;
      // A long text kept beside its row (migrations/shard/0038) is read back from `log_texts`.
      const apart = hasTable(db, "log_texts");
      const text = apart ? "(SELECT json_extract(t.text, '$') FROM log_texts t WHERE t.id = (l.conversation_key << 32) | l.seq)" : "NULL";
      rows = db.prepare(`SELECT l.conversation_key, l.seq, l.kind, l.idempotency_key, l.sensitive, l.body, ${text} AS text, l.hash, l.recorded_at FROM log l ORDER BY l.conversation_key, l.seq`).all();
    } finally {
      db.close();
    }
    if (rows.length === 0) continue;
    const spelled = await respelled(rows);
    floor.events += rows.length;
    floor.bytes += spelled.bytes;
    floor.hashes += spelled.hashes;
    floor.skippedRuns += spelled.skippedRuns;
  }
  return floor;
}

import type { PlannedInsert } from "../../core/append";
import { chunksBySize } from "../../core/chunks";
import type { StoredEvent } from "../../core/events";
import { borrowedTail, compactSource, shortSkipped, storedBody } from "../../core/stored-body";
import { declarationRevisionStatement, revisionOf } from "../declaration-revision";
import type { EventRow } from "./events";
import { IN_LOG, selectByKeys, toStoredEvent } from "./events";
import { hashBytes } from "./hash-bytes";
import { apartText, TEXTS_APART } from "./log-texts";
import { turnTermStatements } from "./turn-terms";

/**
 * The log's one writer (`log`, migrations/shard/0031): an append's events in one D1 batch, spelled
 * as the log keeps them (a skipped run and a source short, 0033; a long text beside its row,
 * 0038), with the turn index's rows and the high-water mark. Rows are only ever inserted; what
 * they read back as is storage/shard/events'.
 */

/** The columns an insert names, in the order a planned row's values give them. */
const INSERTED_COLUMNS = "conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at";

/** The events of conversation ?1 that count as texts (bm25's number of rows, `conversations.texts`): those with a row in the turn index. */
const TEXT_ROW = "(kind IN ('source', 'proposal') OR (kind = 'correction' AND json_extract(body, '$.action') = 'edit'))";

/**
 * Moves the conversation's high-water mark to the newest event its log holds, and its count of
 * texts by the texts after the old mark: once an append, as its batch's last write
 * (migrations/shard/0032), however many rows the batch wrote. Writes nothing when the batch stored
 * nothing new (a replay).
 */
function highWater(db: D1Database, conversationId: string): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE conversations
       SET (texts, last_seq) = (SELECT conversations.texts + SUM(${TEXT_ROW}), MAX(seq) FROM log WHERE ${IN_LOG} AND seq > conversations.last_seq)
       WHERE id = ?1 AND EXISTS (SELECT 1 FROM log WHERE ${IN_LOG} AND seq > conversations.last_seq)`,
    )
    .bind(conversationId);
}

/**
 * A planned row's values as its JSON element carries them: `INSERTED_COLUMNS` but the conversation's
 * key and the hash, then a skipped run's compactor and source (nulls for any other event) and the
 * body as the log spells it short (`core/stored-body`: a skipped run's sizes, a source's compact
 * form, any other body whole), as its head and how many characters of the whole body end it
 * (`borrowedTail`). A row takes the short body once the log is spelled short
 * (`SPELLED_SHORT`), and a skipped run only once its compactor has its key (its first skipped run
 * after the release, spelled whole, gives it one: migrations/shard/0033, `log_compactor_key`). Last,
 * 1 where its text is kept apart (`apart`, 0038: the text travels beside the rows, not in them twice).
 */
function rowValues({ input, seq }: PlannedInsert, recordedAt: number, apart: boolean): (string | number | null)[] {
  // Each short form is tried on its own kind only: trying one reads the whole body.
  const short = input.kind === "run" ? shortSkipped(input) : undefined;
  const body = storedBody(input.kind, input.body);
  const { head, tail } = borrowedTail(short?.body ?? compactSource(input.kind, input.body) ?? body, body);
  return [seq, input.kind, input.idempotencyKey, input.sensitive ? 1 : 0, body, recordedAt, short?.compactor ?? null, short?.sourceSeq ?? null, head, tail, apart ? 1 : null];
}

/** Whether the log takes skipped runs and sources in their short spelling (migrations/shard/0033: once no Worker from before it runs). */
const SPELLED_SHORT = "COALESCE((SELECT short FROM log_spelling WHERE id = 1), 0) = 1";

/**
 * A statement's rows pass as one JSON parameter (D1 takes at most 2 MB a value): more rows than
 * that holds are cut into statements of at most this much (an event larger alone goes alone).
 */
const ROWS_BYTES = 1_000_000;

/**
 * The statements that insert `planned` in order: a few statements whatever their number (each row
 * one element of one JSON parameter), so that a batch's skipped runs (a source's per compactor)
 * cost its invocation no query each. A key that already exists inserts nothing and fires no
 * trigger; `condition` (SQL over ?1, the conversation) must hold for any row to be inserted.
 */
function insertStatements(db: D1Database, conversationId: string, planned: readonly PlannedInsert[], recordedAt: string, condition = "true", extra: readonly unknown[] = []): D1PreparedStatement[] {
  const at = Date.parse(recordedAt);
  const rows = planned.map((row) => {
    const text = apartText(row);
    return { values: rowValues(row, at, text !== null), hash: row.hash, text, seq: row.seq, key: row.input.idempotencyKey };
  });
  // A row's JSON at most triples in UTF-8.
  const chunks = chunksBySize(rows, (row) => JSON.stringify(row.values).length * 3, ROWS_BYTES);
  const value = (i: number) => `json_extract(j.value, '$[${i}]')`;
  // The hashes travel as one BLOB after the other parameters (`hashBytes`), row `j.key`'s at its place.
  const hash = `substr(?${3 + extra.length}, 32 * j.key + 1, 32)`;
  // A skipped run's short key, once the log is spelled short and its compactor has a key (null: spelled whole).
  const shortKey = `(SELECT c.id || ' ' || ${value(7)} FROM compactor_keys c WHERE c.compactor_id = ${value(6)} AND ${SPELLED_SHORT})`;
  // The short body (its head, then the whole body's last characters) where the row is spelled short:
  // a skipped run with its short key, any other event once the log is spelled short.
  const shortBody = `${value(8)} || substr(${value(4)}, length(${value(4)}) - ${value(9)} + 1)`;
  const spelled = `CASE WHEN ${shortKey} IS NOT NULL OR (${value(6)} IS NULL AND ${SPELLED_SHORT}) THEN ${shortBody} ELSE ${value(4)} END`;
  // A long text is kept apart once the release allows (0038): the row's text is the number 0.
  const apart = `${value(10)} IS NOT NULL AND ${TEXTS_APART}`;
  const body = `CASE WHEN ${apart} THEN json_set(${spelled}, '$.text', 0) ELSE ${spelled} END`;
  return chunks.flatMap((chunk) => {
    const values = JSON.stringify(chunk.map((row) => row.values));
    // Each long text first, for a row the next statement will insert (its key not stored yet), so
    // the row finds it (`log_text_kept`); a row that is then not inserted fails the batch, the text
    // with it. The texts travel once, as [seq, key, the text's JSON string], beside the rows.
    const long = chunk.flatMap((row) => (row.text === null ? [] : [[row.seq, row.key, row.text]]));
    const texts =
      long.length === 0
        ? []
        : [
            db
              .prepare(
                `INSERT INTO log_texts (id, text)
                 SELECT (k.id << 32) | json_extract(t.value, '$[0]'), json_extract(t.value, '$[2]')
                 FROM conversation_keys k, json_each(?2) t
                 WHERE k.conversation_id = ?1 AND ${condition} AND ${TEXTS_APART}
                   AND NOT EXISTS (SELECT 1 FROM log l WHERE l.conversation_key = k.id AND l.idempotency_key = json_extract(t.value, '$[1]'))`,
              )
              .bind(conversationId, JSON.stringify(long), ...extra),
          ];
    return [
      ...texts,
      db
        .prepare(
          `INSERT INTO log (${INSERTED_COLUMNS})
           SELECT k.id, ${value(0)}, ${value(1)}, COALESCE(${shortKey}, ${value(2)}), ${value(3)}, ${body}, ${hash}, ${value(5)}
           FROM conversation_keys k, json_each(?2) j
           WHERE k.conversation_id = ?1 AND ${condition} ORDER BY j.key
           ON CONFLICT (conversation_key, idempotency_key) DO NOTHING`,
        )
        .bind(conversationId, values, ...extra, hashBytes(...chunk.map((row) => row.hash))),
    ];
  });
}

/** Whether each planned row is the one this write stored: at its planned place, with its hash, at this write's time. */
const written = (planned: readonly PlannedInsert[], rows: ReadonlyMap<string, StoredEvent>, recordedAt: string): boolean[] =>
  planned.map(({ input, seq, hash }) => {
    const row = rows.get(input.idempotencyKey);
    return row !== undefined && row.seq === seq && row.hash === hash && row.recordedAt === recordedAt;
  });

/** Runs a single source's preflight decided before its write: written with it only if it is (`insertEvents`). */
export interface Followers {
  readonly runs: readonly PlannedInsert[];
  /** The declarations' revision the preflight was decided under. */
  readonly revision: number;
}

export interface InsertResult {
  /** Whether each planned row, then each follower, was written (false: its key already existed, or a follower's condition failed). */
  readonly applied: readonly boolean[];
  /** The log's rows for every planned key and follower after the transaction, new or pre-existing. */
  readonly rows: ReadonlyMap<string, StoredEvent>;
  /** With followers: the declarations' revision as the transaction saw it. */
  readonly revision?: number;
}

/**
 * Appends the planned rows in one D1 batch (one transaction, one round trip). A key that already
 * exists is skipped rather than failing the batch, so a single append needs no read beforehand;
 * the trailing SELECT tells the caller what the log holds for those keys. `together`: statements
 * that must commit with these events or not at all (a boundary with its receipt). `followers` (a
 * single planned source only): each is written only if the source was (its row now at its planned
 * sequence number) and the declarations' revision is still the one they were decided under; the
 * revision as the transaction saw it is returned, so the caller knows which.
 */
export async function insertEvents(
  db: D1Database,
  conversationId: string,
  planned: readonly PlannedInsert[],
  recordedAt: string,
  { together = [], followers }: { readonly together?: readonly D1PreparedStatement[]; readonly followers?: Followers | undefined } = {},
): Promise<InsertResult> {
  const [source] = planned;
  if (followers !== undefined && (planned.length !== 1 || source?.input.kind !== "source")) throw new Error("followers are written with a single source");
  const runs = followers?.runs ?? [];
  const statements = [
    db.prepare("INSERT OR IGNORE INTO conversations (id, created_at) VALUES (?, ?)").bind(conversationId, recordedAt),
    ...together,
    ...insertStatements(db, conversationId, planned, recordedAt),
    ...turnTermStatements(db, conversationId, planned, recordedAt),
    // The runs, only if the source is written here, at its planned place, under the preflight's revision.
    ...(followers === undefined || source === undefined
      ? []
      : insertStatements(
          db,
          conversationId,
          runs,
          recordedAt,
          "EXISTS (SELECT 1 FROM log WHERE conversation_key = k.id AND seq = ?3 AND idempotency_key = ?4 AND hash = ?5) AND (SELECT revision FROM declaration_revision WHERE id = 1) = ?6",
          [source.seq, source.input.idempotencyKey, hashBytes(source.hash), followers.revision],
        )),
    highWater(db, conversationId),
    ...(followers === undefined ? [] : [declarationRevisionStatement(db)]),
    selectByKeys(
      db,
      conversationId,
      [...planned, ...runs].map((p) => p.input.idempotencyKey),
    ),
  ];
  const results = await db.batch<EventRow>(statements);
  const rows = new Map((results.at(-1)?.results ?? []).map((row) => [row.idempotency_key, toStoredEvent(row)]));
  // Written by this batch: the key's row is at the planned sequence number, which was free before
  // it (a statement that inserted nothing does not reliably report 0 changes after one that did).
  const applied = written([...planned, ...runs], rows, recordedAt);
  return followers === undefined ? { applied, rows } : { applied, rows, revision: revisionOf(results.at(-2)) };
}

/** The event a planned row becomes once stored, exactly as `toStoredEvent` reads it back. */
export function storedForm(conversationId: string, { input, hash, seq }: PlannedInsert, recordedAt: string): StoredEvent {
  return toStoredEvent({
    conversation_id: conversationId,
    seq,
    kind: input.kind,
    idempotency_key: input.idempotencyKey,
    sensitive: input.sensitive ? 1 : 0,
    body: storedBody(input.kind, input.body),
    hash,
    recorded_at: Date.parse(recordedAt),
  });
}


import { DurableObject } from "cloudflare:workers";
import { Lifecycle } from "agents/lifecycle";
import type { SearchResult, SessionMessage } from "agents/sessions";
import { Sessions, createCompactFunction } from "agents/sessions";

/**
 * The peer, for the benchmark's peer section (bench/lib/peer-phase.mjs): the Cloudflare Agents
 * SDK's Sessions on a Durable Object of its own, one object per conversation, with the SDK's own
 * compaction (`createCompactFunction`, auto-run by `compactAfter`), its own full-text search and its
 * own reads. Nothing here reaches Foldline. Its summarizer is the loopback fake model the bench
 * starts (OPENAI_BASE_URL), the same endpoint Foldline's compactor calls in that section.
 *
 * Bound as PEER_SESSIONS only in the section's Worker, whose wrangler.toml the bench writes into
 * its own copy of the snapshot; the deployed Worker and the tests never bind it.
 */

declare global {
  interface Env {
    /** The peer's objects: bound only in the bench's peer section (bench/lib/peer-phase.mjs). */
    PEER_SESSIONS?: DurableObjectNamespace<PeerSessions>;
  }
}

/**
 * Foldline's policy in that section is trigger 20,000 / retain 10,000 characters; the SDK counts
 * tokens by its own estimate (the larger of characters ÷ 4 and words × 1.3, plus 4 a message),
 * about 4 characters a token in these chats, so the same trigger and retain in its unit.
 */
const PEER_COMPACT_AFTER_TOKENS = 5_000;
const PEER_KEEP_RECENT_TOKENS = 2_500;
/** The model name the peer's summaries are asked of: the bench counts the fake's calls by it. */
const PEER_MODEL = "bench-peer";

export interface PeerMessage {
  readonly id: string;
  readonly role: "user" | "assistant";
  readonly text: string;
}

/** What one write cost the object's SQLite: rows written (each statement's cursor), and its size after. */
export interface PeerWrite {
  readonly rowsWritten: number;
  readonly databaseBytes: number;
}

const textOf = (message: SessionMessage): string =>
  message.parts.flatMap((part) => (part.type === "text" && "text" in part && typeof part.text === "string" ? [part.text] : [])).join("\n");

const asView = (message: SessionMessage): { id: string; role: string; text: string } => ({ id: message.id, role: message.role, text: textOf(message) });

export class PeerSessions extends DurableObject<Env> {
  /** Every cursor `sql.exec` returned since the last `#written()`: their `rowsWritten` are read once the call is done. */
  #cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  readonly sessions: Sessions;
  readonly lifecycle: Lifecycle;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Rows written, as Cloudflare bills them, are each statement's `rowsWritten`: the SDK runs
    // every statement through `storage.sql.exec`, so the object keeps the cursors it hands out.
    const sql = ctx.storage.sql;
    const exec = sql.exec.bind(sql);
    sql.exec = <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]): SqlStorageCursor<T> => {
      const cursor = exec<T>(query, ...bindings);
      this.#cursors.push(cursor);
      return cursor;
    };
    this.sessions = new Sessions();
    this.lifecycle = Lifecycle.install(this).use(this.sessions);
    this.sessions
      .session()
      .onCompaction(createCompactFunction({ summarize: (prompt) => this.#summarize(prompt), keepRecentTokens: PEER_KEEP_RECENT_TOKENS }))
      .compactAfter(PEER_COMPACT_AFTER_TOKENS);
  }

  get #session() {
    return this.sessions.session();
  }

  /**
   * The SDK's prompt, sent whole as the fake model's `<slice>`: the fake answers a summary request
   * with the first words of its slice (test/fake-openai/server.ts), as it answers Foldline's compactor.
   */
  async #summarize(prompt: string): Promise<string> {
    const response = await fetch(`${String(this.env.OPENAI_BASE_URL)}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer bench-not-a-real-key" },
      body: JSON.stringify({ model: PEER_MODEL, messages: [{ role: "user", content: `<slice>\n${prompt}\n</slice>` }] }),
    });
    if (!response.ok) throw new Error(`summarizer answered ${response.status}`);
    const body: unknown = await response.json();
    const content = (body as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]?.message?.content;
    if (typeof content !== "string") throw new Error("summarizer answered without content");
    return content;
  }

  /** Rows written by the statements run since the last call; cursors are read once their statements are done. */
  #written(): PeerWrite {
    let rows = 0;
    for (const cursor of this.#cursors) rows += cursor.rowsWritten;
    this.#cursors = [];
    return { rowsWritten: rows, databaseBytes: this.ctx.storage.sql.databaseSize };
  }

  /**
   * Builds the full-text index before any message (the SDK builds it on the first search), so every
   * append maintains it; answers with the compaction policy the object runs.
   */
  async open(): Promise<PeerWrite & { policy: { compactAfterTokens: number; keepRecentTokens: number } }> {
    await this.lifecycle.start();
    await this.#session.search("index");
    return { ...this.#written(), policy: { compactAfterTokens: PEER_COMPACT_AFTER_TOKENS, keepRecentTokens: PEER_KEEP_RECENT_TOKENS } };
  }

  /** One message appended (auto-compaction runs inside the append when the estimate crosses the trigger). */
  async append(message: PeerMessage): Promise<PeerWrite & { inserted: boolean }> {
    await this.lifecycle.start();
    const { inserted } = await this.#session.appendMessage({ id: message.id, role: message.role, parts: [{ type: "text", text: message.text }] });
    return { inserted, ...this.#written() };
  }

  /** What the SDK gives a model: the active path with compaction overlays applied. */
  async history(): Promise<{ messages: { id: string; role: string; text: string }[] }> {
    await this.lifecycle.start();
    const messages = (await this.#session.getHistory()).map(asView);
    this.#written();
    return { messages };
  }

  /** The SDK's search, as it is called: the query is matched as one FTS5 phrase. */
  async search(query: string, limit: number): Promise<SearchResult[]> {
    await this.lifecycle.start();
    const results = await this.#session.search(query, { limit });
    this.#written();
    return results;
  }

  async edit(message: PeerMessage): Promise<PeerWrite & { stored: boolean }> {
    await this.lifecycle.start();
    const stored = await this.#session.updateMessage({ id: message.id, role: message.role, parts: [{ type: "text", text: message.text }] });
    return { stored: stored !== null, ...this.#written() };
  }

  /** An overlay stored directly: the SDK's `addCompaction`, which anyone holding the object can call. */
  async addCompaction(summary: string, fromMessageId: string, toMessageId: string): Promise<PeerWrite & { id: string }> {
    await this.lifecycle.start();
    const { id } = await this.#session.addCompaction(summary, fromMessageId, toMessageId);
    return { id, ...this.#written() };
  }

  async compactions(): Promise<{ id: string; summary: string; fromMessageId: string; toMessageId: string; createdAt: string }[]> {
    await this.lifecycle.start();
    return this.#session.getCompactions();
  }

  /** The object's SQLite size (`databaseSize`), and the rows written since the last call (its start's, for a fresh object). */
  async stats(): Promise<PeerWrite> {
    await this.lifecycle.start();
    return this.#written();
  }
}

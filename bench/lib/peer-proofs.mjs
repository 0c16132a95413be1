// What each system can prove, shown by running it (the peer section, lib/peer-phase.mjs), on one
// replayed LoCoMo conversation whose history both have compacted:
//   (a) a summary's coverage: Foldline's `GET …/verify`; the peer's stored overlays, all it has.
//   (b) an edit of summarized history after compaction: a Telegram `edited_message` for a turn both
//       summaries cover, and the peer's `updateMessage` of the same message; then what each serves.
//   (c) a forged summary: the peer's `addCompaction` over its newest overlay's span; Foldline's head
//       boundary rewritten in the stopped Worker's D1 with its hash recomputed (and a fork inserted
//       beside it), then what a restarted Worker serves and what its audit says.
import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import canonicalize from "canonicalize";
import { Api } from "./api.mjs";

const FORGED = "Everyone agreed to double the budget and skip the vote.";
const MARKER = "EDIT-7Q4";
const ENVELOPE = /^<untrusted-history-summary kind="(\w+)">/;

/** @typedef {import("./peer-phase.mjs").Peer} Peer */

/** `GET …/context?agent=`, whatever it answers. @param {Api} api @param {string} conversation @param {string} agent */
const contextOf = (api, conversation, agent) => api.request("GET", `${Api.conversationPath(conversation)}/context?agent=${encodeURIComponent(agent)}`);

/** Where a served message's text sits: its envelope's kind, or the tail. @param {{ content: string }} m */
const servedAs = (m) => ENVELOPE.exec(m.content)?.[1] ?? "tail";

/**
 * (a) Foldline re-hashes the chain from D1 events and R2 packets; the peer lists its overlays.
 * @param {{ api: Api, peer: Peer, agent: string, conversation: string, object: string }} o
 */
export async function verifyCoverage({ api, peer, agent, conversation, object }) {
  const response = await api.request("GET", `${Api.conversationPath(conversation)}/verify?agent=${encodeURIComponent(agent)}`);
  const audit = response.status === 200 ? response.json() : null;
  const links = (audit?.epochs ?? []).flatMap((/** @type {any} */ e) => e.links);
  const overlays = (await peer.call(object, "compactions")).body;
  return {
    foldline: {
      status: response.status,
      valid: audit?.valid ?? null,
      links: links.length,
      checksPerLink: (links[0]?.checks ?? []).map((/** @type {{ name: string }} */ c) => c.name),
      logMissing: audit?.log?.missing?.length ?? null,
      logAltered: audit?.log?.altered?.length ?? null,
    },
    peer: { overlays: overlays.length, overlayFields: Object.keys(overlays[0] ?? {}), verifyCall: null },
  };
}

/**
 * (b) One turn both summaries cover, edited in each; then what each serves.
 * @param {{ api: Api, peer: Peer, agent: string, secret: string, bot: string, replayed: import("./locomo-phase.mjs").Replayed & { object: string } }} o
 */
export async function editAfterCompaction({ api, peer, agent, secret, bot, replayed: c }) {
  const before = (await api.context(c.conversation, agent)).json().manifest;
  const covered = before.boundary?.coveredThroughSeq ?? 0;
  const overlays = (await peer.call(c.object, "compactions")).body;
  const newest = overlays.at(-1);
  const index = (/** @type {string | undefined} */ id) => c.turns.findIndex((t) => t.messageId === id);
  const [from, to] = newest === undefined ? [-1, -1] : [index(newest.fromMessageId), index(newest.toMessageId)];
  const candidates = c.turns.filter((t) => t.seq <= covered && t.index >= from && t.index <= to && from >= 0);
  const turn = candidates[Math.floor(candidates.length / 2)];
  if (turn === undefined) return { turn: null, reason: `no turn covered by both (Foldline through seq ${covered}, the peer's newest overlay ${from}…${to})` };
  const text = `${turn.text} (edited: moved to Thursday, ${MARKER})`;

  // Foldline: the edit as Telegram delivers it.
  const chatId = Number(c.conversation.split(":")[2]);
  const speaker = turn.speaker === c.data.speaker_a ? 0 : 1;
  const edited = {
    update_id: 9_000_000 + turn.index,
    edited_message: { message_id: Number(turn.messageId), date: 1_700_000_000, edit_date: 1_700_000_060, chat: { id: chatId, type: "group", title: `LoCoMo ${c.data.id}` }, from: { id: c.n * 1_000 + speaker + 1, is_bot: false, first_name: turn.speaker }, text },
  };
  const webhook = await api.request("POST", `/telegram/${bot}/webhook`, edited, { "x-telegram-bot-api-secret-token": secret });
  const context = await contextOf(api, c.conversation, agent);
  const body = context.status === 200 ? context.json() : null;
  const carrying = (body?.messages ?? []).filter((/** @type {{ content: string }} */ m) => m.content.includes(MARKER));

  // The peer: the same message updated in place.
  const update = await peer.call(c.object, "edit", { message: { id: turn.messageId, role: speaker === 0 ? "user" : "assistant", text: `${turn.speaker}: ${text}` } });
  const history = (await peer.call(c.object, "history")).body.messages;
  const found = (await peer.call(c.object, "search", { query: MARKER, limit: 5 })).body;
  return {
    turn: { diaId: turn.diaId, seq: turn.seq, index: turn.index, foldlineCoveredThroughSeq: covered, peerOverlay: [from, to] },
    foldline: {
      webhookStatus: webhook.status,
      contextStatus: context.status,
      served: carrying.length > 0,
      servedAs: carrying.map(servedAs),
      amendmentItems: (body?.manifest.amendment?.items ?? []).map((/** @type {{ kind: string }} */ a) => a.kind),
      boundaryUnchanged: body?.manifest.boundary?.id === before.boundary?.id,
    },
    peer: {
      stored: update.body.stored,
      served: history.some((/** @type {{ text: string }} */ m) => m.text.includes(MARKER)),
      messageInHistory: history.some((/** @type {{ id: string }} */ m) => m.id === turn.messageId),
      foundBySearch: found.some((/** @type {{ id: string }} */ r) => r.id === turn.messageId),
    },
  };
}

/**
 * (c) on the peer: a second overlay over its newest overlay's span, stored through the SDK's own
 * `addCompaction`; then what its history serves.
 * @param {{ peer: Peer, object: string }} o
 */
export async function forgePeer({ peer, object }) {
  const overlays = (await peer.call(object, "compactions")).body;
  const newest = overlays.at(-1);
  if (newest === undefined) return { accepted: false, reason: "the peer compacted nothing" };
  const stored = await peer.call(object, "add-compaction", { summary: FORGED, from: newest.fromMessageId, to: newest.toMessageId });
  const history = (await peer.call(object, "history")).body.messages;
  const after = (await peer.call(object, "compactions")).body;
  return {
    accepted: typeof stored.body.id === "string",
    rowsWritten: stored.body.rowsWritten,
    forgedServed: history.some((/** @type {{ text: string }} */ m) => m.text.includes(FORGED)),
    originalServed: history.some((/** @type {{ text: string }} */ m) => m.text === newest.summary),
    overlaysStored: { before: overlays.length, after: after.length },
  };
}

/** The error SQLite raised, or null when the statement ran. @param {() => void} run */
function refusal(run) {
  try {
    run();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * (c) on Foldline, in the stopped Worker's D1 (the shard file that holds the head boundary): the
 * head's summary rewritten and its hash recomputed (RFC 8785 JSON, SHA-256, as src/core/hash.ts
 * hashes it), first with the table's immutability triggers in place, then with them dropped around
 * it as a person with database access could; and a fork, a second boundary on the same predecessor.
 * @param {string} persistDir @param {string | null} boundaryId
 */
export async function forgeFoldline(persistDir, boundaryId) {
  if (boundaryId === null) return { rewritten: false, reason: "no head boundary to forge" };
  const { DatabaseSync } = await import("node:sqlite");
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file));
    try {
      const hasTable = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'boundaries'").get() !== undefined;
      const row = hasTable ? /** @type {{ body: string } | undefined} */ (db.prepare("SELECT body FROM boundaries WHERE id = ?").get(boundaryId)) : undefined;
      if (row === undefined) continue;
      const body = JSON.parse(row.body);
      body.content = { ...body.content, summary: FORGED, ...(typeof body.content?.preview === "string" ? { preview: FORGED } : {}) };
      const canonical = /** @type {string} */ (canonicalize(body));
      const hash = createHash("sha256").update(canonical, "utf8").digest("hex");
      const update = () => db.prepare("UPDATE boundaries SET body = ?, hash = ? WHERE id = ?").run(canonical, hash, boundaryId);
      const byTrigger = refusal(update);
      const guard = (/** @type {string} */ op) => `CREATE TRIGGER boundaries_immutable_${op} BEFORE ${op.toUpperCase()} ON boundaries BEGIN SELECT RAISE(ABORT, 'boundaries: rows are immutable'); END`;
      db.exec("DROP TRIGGER boundaries_immutable_update");
      const rewrite = refusal(update);
      db.exec(guard("update"));
      const fork = refusal(() => db.prepare("INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at) SELECT ? || '-fork', conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id || '-fork', body, hash, created_at FROM boundaries WHERE id = ?").run(boundaryId, boundaryId));
      return { rewritten: rewrite === null, refusedWithTriggers: byTrigger, rewriteError: rewrite, forkRefused: fork };
    } finally {
      db.close();
    }
  }
  return { rewritten: false, reason: `boundary ${boundaryId} not found in any database` };
}

/**
 * What a Worker restarted on the forged state serves and what its audit says.
 * @param {Api} api @param {string} agent @param {string} conversation
 */
export async function servedAfterForgery(api, agent, conversation) {
  const context = await contextOf(api, conversation, agent);
  const body = context.json();
  const audit = await api.request("GET", `${Api.conversationPath(conversation)}/verify?agent=${encodeURIComponent(agent)}`);
  const report = audit.status === 200 ? audit.json() : null;
  return {
    contextStatus: context.status,
    error: body.error === undefined ? null : { code: body.error.code, reason: body.error.reason ?? null, cause: body.error.cause ?? null },
    forgedServed: context.status === 200 && JSON.stringify(body.messages).includes(FORGED),
    verifyValid: report?.valid ?? null,
    anchorDetail: report?.epochs?.[0]?.anchor?.detail ?? null,
  };
}

#!/usr/bin/env node
// `npm run demo`: replays the demo conversation (scripts/demo/conversation.mjs) against a running
// Foldline — people through the real Telegram webhook, the bot's replies as an external bot posts
// them — shows the compactions as they settle, then an edit and a delivery receipt that arrive
// after their part of the history was compacted, and prints the chain, the composed request and
// the chain's verification, and ends with a question about an early fact the served context no
// longer holds, answered from the memory pages extracted as the chain settled. It exits non-zero
// unless it ends with a verified chain of at least three boundaries, an amendment, and that answer
// in the memory envelope.
//
// Talks to http://127.0.0.1:$FOLDLINE_PORT (default 8787, where `npm start` listens) with the token
// and webhook secret `npm start` made (.wrangler/foldline/local.json); FOLDLINE_URL, FOLDLINE_TOKEN
// and FOLDLINE_TELEGRAM_SECRET override them.
import { parseArgs } from "node:util";
import { DEMO_PROMPT, GROUP_TITLE, LATE_EDIT, MEMORY_QUESTIONS, PEOPLE, SESSIONS } from "./demo/conversation.mjs";
import { DEMO_AGENT_ID, DEMO_COMPACTOR_ID, DEMO_POLICY, registerDemoAgent } from "./lib/demo-agent.mjs";
import { UNCHECKED, wrap } from "./lib/demo-text.mjs";
import { localPort, localUrl } from "./lib/local-port.mjs";
import { DEMO_BOT_ID, LOCAL_STATE_DISPLAY, readLocalState } from "./lib/local-state.mjs";

const { values: options } = parseArgs({
  options: {
    url: { type: "string", default: process.env.FOLDLINE_URL || localUrl(localPort()) },
    quiet: { type: "boolean", default: false },
  },
});
const BASE = options.url.replace(/\/$/, "");
const local = readLocalState();
const TOKEN = process.env.FOLDLINE_TOKEN ?? local?.token;
const SECRET = process.env.FOLDLINE_TELEGRAM_SECRET ?? local?.telegramWebhookSecret;
if (TOKEN === undefined || SECRET === undefined) {
  console.error(`No local token: run \`npm start\` first (it makes ${LOCAL_STATE_DISPLAY}), or set FOLDLINE_TOKEN and FOLDLINE_TELEGRAM_SECRET.`);
  process.exit(2);
}

/** How long one compaction may take to settle before the demo says so and stops. */
const SETTLE_TIMEOUT_MS = Number(process.env.FOLDLINE_DEMO_SETTLE_MS ?? 90_000);
const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (/** @type {string} */ line) => console.log(line);
/** 1,600 rather than 1600, as the policy line writes it. @param {number} n */
const fmt = (n) => n.toLocaleString("en-US");
const progress = (/** @type {string} */ line) => {
  if (!options.quiet) console.log(line);
};

class DemoError extends Error {}

/** @param {string} method @param {string} path @param {unknown} [body] @param {Record<string, string>} [extraHeaders] */
async function call(method, path, body, extraHeaders = {}) {
  /** @type {Record<string, string>} */
  const headers = { authorization: `Bearer ${TOKEN}`, ...extraHeaders };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${BASE}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  // The API's JSON, read field by field below; a response that is not JSON is reported with its text.
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: reported below with the text
  }
  return { status: response.status, json, text };
}

/** @param {string} what @param {Awaited<ReturnType<typeof call>>} response @param {number[]} ok */
function expectStatus(what, response, ok) {
  if (!ok.includes(response.status)) throw new DemoError(`${what}: HTTP ${response.status} ${response.text.slice(0, 500)}`);
  return response.json;
}

// One fresh group chat per run, so the demo can run again against the same service.
const chatId = -(1_000_000_000 + Math.floor(Math.random() * 1_000_000_000));
const conversation = `telegram:${DEMO_BOT_ID}:${chatId}`;
const conversationPath = `/v1/conversations/${encodeURIComponent(conversation)}`;
let updateId = Date.now();
let messageId = 0;
/** Unix seconds: the conversation happened over the last eight days. */
const startedAt = Math.floor(Date.now() / 1000) - 8 * 86_400;

/** The Telegram webhook, exactly as Telegram calls it. @param {object} update */
async function deliverUpdate(update) {
  const response = await fetch(`${BASE}/telegram/${DEMO_BOT_ID}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET },
    body: JSON.stringify({ update_id: updateId++, ...update }),
  });
  if (response.status !== 200) throw new DemoError(`telegram webhook: HTTP ${response.status} ${(await response.text()).slice(0, 500)}`);
}

const chat = { id: chatId, type: "group", title: GROUP_TITLE };

/** Follows the conversation's log: which message is at which seq, and the compactor's runs. */
const log = {
  after: 0,
  /** @type {Map<string, number>} Telegram message id → seq of its source event */
  sourceSeq: new Map(),
  /** @type {Map<string, number>} proposal id → seq */
  proposalSeq: new Map(),
  /** @type {Map<string, { status: string, detail: unknown }>} compaction runs by id (skipped preflights excluded) */
  runs: new Map(),
  /** @type {Map<string, { frozenTurns: number, frozenChars: number, retainedTailChars: number }>} what each planned run froze */
  frozen: new Map(),
  /** @type {{ seq: number, at: number, activeChars: number, status: string, reason?: string, runId: string } | undefined} the newest recorded check: a plan or a skip (`seq` the message checked, `at` the record's own) */
  lastCheck: undefined,
  /** Seq of the newest completed compaction run. */
  lastSettledAt: 0,
  /** @type {{ seq: number, kind: string }[]} every event's kind (a correction's action), in order */
  kinds: [],
  async poll() {
    for (;;) {
      const page = expectStatus("reading the log", await call("GET", `${conversationPath}/events?after=${this.after}&limit=500`), [200]);
      for (const event of page.events) {
        this.after = event.seq;
        this.kinds.push({ seq: event.seq, kind: event.kind === "correction" ? event.body.action : event.kind });
        if (event.kind === "source") this.sourceSeq.set(event.body.messageId, event.seq);
        if (event.kind === "proposal") this.proposalSeq.set(event.body.proposalId, event.seq);
        if (event.kind !== "run" || event.body.agentId !== DEMO_COMPACTOR_ID) continue;
        const { runId, status, detail, error } = event.body;
        // Every check against the trigger that a person's message makes leaves a skip (with its reason)
        // or a plan; one made when a compaction settles leaves a record only when it plans.
        if (status === "skipped" || status === "planned") {
          this.lastCheck = { seq: detail.sourceSeq ?? detail.triggerSeq, at: event.seq, activeChars: detail.activeChars, status, reason: detail.reason, runId };
        }
        if (status === "completed") this.lastSettledAt = event.seq;
        if (status === "skipped") continue;
        if (status === "planned") this.frozen.set(runId, detail);
        this.runs.set(runId, { status, detail });
        if (status === "planned") progress(`      ⋯ compaction planned (run ${runId.slice(0, 8)}): the oldest history past the trigger is frozen into a packet`);
        if (status === "completed") progress(`      ✓ compaction completed (run ${runId.slice(0, 8)}) by ${event.body.model ?? "?"}`);
        if (status === "failed") progress(`      ✗ compaction failed (run ${runId.slice(0, 8)}): ${error?.code ?? "unknown"} — it will be retried`);
      }
      if (page.nextAfter === null || page.events.length === 0) return;
    }
  },
  inFlight() {
    const open = new Set();
    for (const [runId, run] of this.runs) {
      if (run.status === "planned") open.add(runId);
      else open.delete(runId);
    }
    return open.size;
  },
};

async function chainNow() {
  return expectStatus("reading the chain", await call("GET", `${conversationPath}/chain?agent=${DEMO_AGENT_ID}`), [200]);
}

/** Waits until no compaction is in flight (planned without a completed receipt yet). */
async function settle() {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  // The queue delivers in batches after up to a second; a plan may still be on its way.
  await sleep(300);
  for (;;) {
    await log.poll();
    const openRuns = [...log.runs.values()].filter((run) => run.status === "planned").length;
    const settledRuns = new Set([...log.runs.entries()].filter(([, run]) => run.status === "completed").map(([id]) => id));
    const chain = await chainNow();
    const current = chain.boundaries.filter((b) => b.current);
    if (current.length >= settledRuns.size && openRuns === 0) return current;
    if (Date.now() > deadline) throw new DemoError(`a compaction did not settle within ${SETTLE_TIMEOUT_MS / 1000} s (is the queue consumer running? see the service's output)`);
    await sleep(250);
  }
}

async function main() {
  const health = await fetch(`${BASE}/healthz`).catch(() => undefined);
  if (health === undefined || !health.ok) throw new DemoError(`Foldline does not answer on ${BASE}: start it with \`npm start\` in another terminal`);
  await registerDemoAgent(BASE, TOKEN);

  say(`Demo conversation ${conversation}: "${GROUP_TITLE}", a Telegram group with a concierge bot`);
  say(`  policy of ${DEMO_COMPACTOR_ID}: compact when the context reaches ${fmt(DEMO_POLICY.triggerInputChars)} characters, keep up to ${fmt(DEMO_POLICY.retainInputChars)} of the newest exact (demo-sized)\n`);

  /** @type {Map<string, number>} conversation keys → Telegram message ids */
  const keyed = new Map();
  /** @type {{ proposalId: string, messageId: number }[]} */
  const lateDeliveries = [];
  let lastPersonMessage = 0;
  for (const [index, session] of SESSIONS.entries()) {
    say(`── Session ${index + 1}: ${session.title}`);
    let minute = 0;
    for (const turn of session.turns) {
      const id = ++messageId;
      const date = startedAt + session.day * 86_400 + 9 * 3_600 + minute++ * 60;
      if (turn.key !== undefined) keyed.set(turn.key, id);
      if (turn.from === "bot") {
        const proposalId = `demo-${id}`;
        const events = [
          {
            kind: "proposal",
            idempotencyKey: `proposal:${proposalId}`,
            body: { proposalId, agentId: DEMO_AGENT_ID, text: turn.text, replyToMessageId: String(lastPersonMessage) },
          },
        ];
        if (turn.lateDelivery) lateDeliveries.push({ proposalId, messageId: id });
        else events.push({ kind: "delivery", idempotencyKey: `delivery:${proposalId}`, body: { status: "delivered", proposalId, externalMessageId: String(id) } });
        expectStatus("posting the bot's reply", await call("POST", `${conversationPath}/events/batch`, { events }), [200, 201]);
        progress(`   concierge: ${clip(turn.text, 96)}${turn.lateDelivery ? "   (its delivery receipt is delayed)" : ""}`);
      } else {
        lastPersonMessage = id;
        const from = { ...PEOPLE[turn.from], is_bot: false };
        await deliverUpdate({ message: { message_id: id, date, chat, from, text: turn.text } });
        progress(`   ${from.first_name.toLowerCase()}: ${clip(turn.text, 100)}`);
      }
      await log.poll();
    }
    const current = await settle();
    say(`   → ${current.length} boundar${current.length === 1 ? "y" : "ies"} so far, the newest covering through seq ${current.at(-1)?.coveredThroughSeq ?? "—"}\n`);
  }

  // Both late arrivals must touch history a boundary already covers, or they would be plain tail.
  const chain = await chainNow();
  const covered = Math.max(0, ...chain.boundaries.filter((b) => b.current).map((b) => b.coveredThroughSeq));
  const editedMessage = keyed.get(LATE_EDIT.key);
  const editedSeq = log.sourceSeq.get(String(editedMessage));
  say("── Late arrivals, after their part of the conversation was compacted");
  if (editedSeq === undefined || editedSeq > covered) throw new DemoError(`message ${editedMessage} (seq ${editedSeq}) is not covered by a boundary yet (covered through ${covered})`);
  await deliverUpdate({
    edited_message: {
      message_id: editedMessage,
      date: startedAt + 9 * 3_600 + 2 * 60,
      edit_date: Math.floor(Date.now() / 1000),
      chat,
      from: { ...PEOPLE.ada, is_bot: false },
      text: LATE_EDIT.text,
    },
  });
  say(`   ada edits her Monday message (seq ${editedSeq}, covered by the chain): "${clip(LATE_EDIT.text, 90)}"`);
  for (const late of lateDeliveries) {
    const seq = log.proposalSeq.get(late.proposalId);
    if (seq === undefined || seq > covered) throw new DemoError(`proposal ${late.proposalId} (seq ${seq}) is not covered by a boundary yet`);
    const receipt = { status: "delivered", proposalId: late.proposalId, externalMessageId: String(late.messageId) };
    expectStatus("posting the late delivery", await call("POST", `${conversationPath}/events`, { kind: "delivery", idempotencyKey: `delivery:${late.proposalId}`, body: receipt }), [200, 201]);
    say(`   the delivery receipt of the concierge's reply ${late.proposalId} (seq ${seq}) finally arrives`);
  }
  await log.poll();
  say("");

  await report();
}

/** @param {string} text @param {number} max */
function clip(text, max) {
  const flat = text.replace(/\s+/g, " ");
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

async function report() {
  const chain = await chainNow();
  const current = chain.boundaries.filter((b) => b.current);
  await log.poll();
  say(`── The chain of ${DEMO_AGENT_ID}: ${current.length} boundaries, epoch ${chain.currentEpochId}`);
  const models = new Set(current.map((b) => `${b.model?.provider}/${b.model?.model}`));
  if (models.size === 1) say(`   all written by ${[...models][0]}; each one summarizes everything up to its seq and links to the one before`);
  /** @type {Map<string, number[]>} preview → positions with it */
  const byPreview = new Map();
  for (const [index, boundary] of current.entries()) {
    const before = current[index - 1];
    const range = before === undefined ? `seq ≤ ${boundary.coveredThroughSeq}` : `seq ${before.coveredThroughSeq + 1}–${boundary.coveredThroughSeq}`;
    const frozen = log.frozen.get(boundary.runId);
    const added = frozen === undefined ? "" : ` (${frozen.frozenTurns} turns, ${fmt(frozen.frozenChars)} characters)`;
    const model = models.size === 1 ? "" : `  by ${boundary.model?.provider}/${boundary.model?.model}`;
    say(`   #${boundary.position}  ${before === undefined ? "covers" : "adds"} ${range}${added}  ${boundary.id.slice(0, 12)}…${model}`);
    if (boundary.preview === null) continue;
    const same = byPreview.get(boundary.preview);
    say(`       preview: ${same === undefined ? clip(boundary.preview, 110) : `the same first line as #${same[0]}`}`);
    byPreview.set(boundary.preview, [...(same ?? []), boundary.position]);
  }
  const repeated = [...byPreview.values()].filter((positions) => positions.length > 1);
  if (repeated.length > 0) {
    // The listing serves only the preview (the summary's first line, never the summary itself).
    const extractive = [...models].every((m) => m.startsWith("foldline-extractive/"));
    const why = extractive ? "the offline extractive compactor opens each summary with the previous one's first line (\"Earlier: …\"), so the chain reads on" : "these summaries open alike";
    for (const line of wrap(`(a preview is the first line of its summary, and ${why}: what tells them apart is the range each adds)`, 104)) say(`   ${line}`);
  }

  const context = expectStatus("reading the context", await call("GET", `${conversationPath}/context?agent=${DEMO_AGENT_ID}`), [200]);
  const { manifest } = context;
  say("\n── What the agent is served now (GET …/context)");
  say(`   boundary #${manifest.boundary?.position ?? "—"}: ${fmt(manifest.boundary?.envelopeChars ?? 0)} characters`);
  const items = manifest.amendment?.items ?? [];
  say(`   amendment: ${items.length === 0 ? "none" : `${fmt(manifest.amendment.envelopeChars)} characters, ${items.map((i) => `${i.kind} ${i.turnId}`).join(", ")}`}`);
  say(`   exact tail: ${manifest.tail.turns} turns, ${fmt(manifest.tail.chars)} characters`);
  say(`   total: ${fmt(manifest.totals.chars)} characters in ${manifest.totals.messages} messages (the whole conversation is ${fmt(await conversationChars())} characters)`);
  for (const line of triggerNote(manifest, current)) say(`   ${line}`);
  // The envelopes exactly as the model reads them: the summary is data inside a fixed frame.
  for (const message of context.messages.slice(0, (manifest.boundary === null ? 0 : 1) + (manifest.amendment === null ? 0 : 1))) {
    say("");
    for (const line of String(message.content).split("\n")) say(`   │ ${line}`);
  }

  const composed = expectStatus("composing a request", await call("POST", `${conversationPath}/compose`, { agent: DEMO_AGENT_ID, prompt: { text: DEMO_PROMPT } }), [200]);
  say(`\n── One provider request (POST …/compose, model ${composed.request?.model ?? composed.model ?? "?"})`);
  const messages = composed.request?.messages ?? composed.messages ?? [];
  for (const message of messages) {
    const text = typeof message.content === "string" ? message.content : message.content.map((p) => p.text ?? `[${p.type}]`).join(" ");
    say(`   ${message.role.padEnd(9)} ${clip(text, 120)}`);
  }

  const audit = expectStatus("verifying the chain", await call("GET", `${conversationPath}/verify?agent=${DEMO_AGENT_ID}`), [200]);
  const epoch = audit.epochs.find((e) => e.current);
  say(`\n── Verification (GET …/verify): every hash recomputed from the D1 log and the R2 packets`);
  for (const link of epoch?.links ?? []) {
    const failed = link.checks.filter((c) => !c.ok);
    say(`   #${link.position} ${link.valid ? "valid" : "INVALID"} (${link.checks.length} checks${failed.length > 0 ? `; failed: ${failed.map((c) => `${c.name}: ${c.detail ?? ""}`).join("; ")}` : ""})`);
  }
  say(`   chain: ${audit.valid ? "VERIFIED" : "NOT VERIFIED"}`);
  say(`\nInspect it: ${BASE}/inspector/conversations/${encodeURIComponent(conversation)}?agent=${DEMO_AGENT_ID}`);

  const recalled = await memoryQuestion(context);

  const problems = [];
  if (!recalled) problems.push("no memory page held and served the answer to a question the served context could not answer");
  if (!audit.valid) problems.push("the chain does not verify");
  if (current.length < 3) problems.push(`only ${current.length} boundaries (expected at least 3)`);
  if (items.length === 0) problems.push("no amendment in the served context");
  if (problems.length > 0) throw new DemoError(problems.join("; "));
}

/**
 * Why the served total may stand above the trigger (src/core/preflight-decider.ts,
 * src/durable/active-history.ts, src/durable/settlement.ts): the trigger is checked when a person's
 * message (a source) arrives — each check recorded as a plan or a skipped run — and again, unrecorded
 * unless it plans, when a compaction settles; always against the same parts the agent is served, the
 * boundary and amendment envelopes plus the exact uncovered turns. Replies, edits and receipts are
 * not checked, and a compaction freezes only the turns beyond the retained tail, so the total can
 * sit above the trigger until the next message.
 * @param {{ totals: { chars: number }, tail: { chars: number }, amendment: { envelopeChars: number, items: { kind: string, turnId: string }[] } | null }} manifest
 * @param {{ position: number, runId: string }[]} current the chain's current boundaries
 */
function triggerNote(manifest, current) {
  const { triggerInputChars: trigger, retainInputChars: retain } = DEMO_POLICY;
  const check = log.lastCheck;
  if (check === undefined || manifest.totals.chars < trigger) return [];
  const planned = log.frozen.get(check.runId);
  const became = current.find((b) => b.runId === check.runId);
  const settledSince = log.lastSettledAt > check.at ? ", and the check when it settled planned nothing more" : "";
  const outcome =
    check.status === "planned"
      ? `planned the compaction that became ${became === undefined ? "a boundary" : `boundary #${became.position}`}${planned === undefined ? "" : ` (it froze ${fmt(planned.frozenChars)} characters and kept ${fmt(planned.retainedTailChars)} exact)`}`
      : check.reason === "below_trigger"
        ? "was below it"
        : check.reason === "nothing_to_freeze"
          ? `found nothing to freeze: every uncovered turn fit the ${fmt(retain)} kept exact`
          : check.reason === "compaction_in_flight"
            ? `waited for the compaction in flight${settledSince}`
            : `waited (${check.reason})`;
  const later = log.kinds.filter((e) => e.seq > check.seq && e.kind !== "run");
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const { kind } of later) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  const arrived = [...counts].map(([kind, n]) => `${n} ${UNCHECKED[kind] ?? kind}${n === 1 ? "" : "s"}`);
  const list = arrived.length <= 1 ? arrived.join("") : `${arrived.slice(0, -1).join(", ")} and ${arrived.at(-1)}`;
  const amended = manifest.amendment === null ? "" : `; the ${fmt(manifest.amendment.envelopeChars)}-character amendment is what they changed in covered history (${manifest.amendment.items.map((i) => `${i.kind} ${i.turnId}`).join(", ")})`;
  const since = counts.has("source") || arrived.length === 0 ? "" : ` Since then no one has written: ${list} arrived, which are not checked${amended}.`;
  const note =
    `why above the ${fmt(trigger)} trigger: the trigger is checked when a person's message arrives and when a compaction settles, ` +
    `against these same parts (boundary + amendment + exact tail), and a compaction freezes only turns beyond the newest ${fmt(retain)}. ` +
    `The last check in the log, for the message at seq ${check.seq}, counted ${fmt(check.activeChars)} characters and ${outcome}.${since} ` +
    `The next message is checked again (the exact tail holds ${fmt(manifest.tail.chars)} now).`;
  return wrap(note, 104).map((line, i) => (i === 0 ? line : `  ${line}`));
}


/**
 * Asks the memory questions whose answers the served context (boundary + tail) no longer holds,
 * and ends on the first one an extracted memory page still holds: the memory search finds it (as
 * the page's entry or the exact message it came from) with its messages, and compose serves the
 * answer in the memory envelope — as the page's entry or as the exact older turns it was taken
 * from, whichever recall ranked first, and the output says which (untrusted history either way,
 * never instructions). False when no forgotten fact is both on a page and served.
 * @param {{ messages: { content: unknown }[] }} context what `GET …/context` served
 */
async function memoryQuestion(context) {
  const served = context.messages.map((m) => String(m.content)).join("\n");
  const listing = expectStatus("listing memory pages", await call("GET", `${conversationPath}/memory/pages?agent=${DEMO_AGENT_ID}&limit=500`), [200]);
  const extracted = (listing.pages ?? []).filter((p) => p.path.startsWith("extracted/"));
  say(`\n── Memory: ${extracted.length} pages extracted from this conversation as the chain settled (GET …/memory/pages?agent=${DEMO_AGENT_ID})`);
  for (const pick of MEMORY_QUESTIONS.filter((q) => !served.includes(q.answer))) {
    const page = await pageHolding(extracted, pick.answer);
    if (page === undefined) continue;
    const search = expectStatus("searching memory", await call("GET", `${conversationPath}/memory/search?agent=${DEMO_AGENT_ID}&q=${encodeURIComponent(pick.question)}&limit=20`), [200]);
    const found = (search.results ?? []).find((r) => String(r.content).includes(pick.answer));
    if (found === undefined) continue;
    const composed = expectStatus("composing with recall", await call("POST", `${conversationPath}/compose`, { agent: DEMO_AGENT_ID, prompt: { text: pick.question } }), [200]);
    const memory = (composed.request?.messages ?? []).find((m) => typeof m.content === "string" && m.content.includes('kind="memory"'));
    if (memory === undefined || !String(memory.content).includes(pick.answer)) continue;
    const listed = composed.manifest?.memory;
    /** @type {{ path: string, keys?: string[] }[]} */
    const servedPages = listed?.pages ?? [];
    const servedTurns = listed?.turns ?? [];
    const fromPage = servedPages.find((p) => p.path === page.path);
    say(`   question: "${pick.question}"`);
    say(`   "${pick.answer}" is in neither the boundary nor the exact tail any more; the page ${page.path} holds it:`);
    for (const line of String(page.content).split("\n").filter((l) => l.includes(pick.answer)).slice(0, 2)) say(`   │ ${clip(line, 116)}`);
    say(`   memory search finds it as ${found.type === "entry" ? `the page's entry ${found.key}` : found.type === "turn" ? "the exact older message it was taken from" : `the page ${found.path}`}, from message(s) ${(found.sources ?? []).map((s) => `${s.messageId} (seq ${s.seq})`).join(", ")}`);
    // The manifest says what compose put in the envelope: the page's entries, or the older turns the page was taken from.
    const how =
      fromPage !== undefined
        ? `from that page${fromPage.keys === undefined ? "" : ` (entr${fromPage.keys.length === 1 ? "y" : "ies"} ${fromPage.keys.join(", ")})`}`
        : "from the exact older messages, not from the page";
    const pagesServed = servedPages.length === 0 ? "no page entries" : `entries of ${servedPages.length} page${servedPages.length === 1 ? "" : "s"}`;
    say(`   compose served it ${how}: a memory envelope of ${fmt(listed?.envelopeChars ?? 0)} characters with ${servedTurns.length} older turn${servedTurns.length === 1 ? "" : "s"} and ${pagesServed}:`);
    for (const line of String(memory.content).split("\n").filter((l) => l.includes(pick.answer)).slice(0, 2)) say(`   │ ${clip(line, 116)}`);
    return true;
  }
  say("   no fact the served context forgot is held by a memory page and served");
  return false;
}

/**
 * The first of the conversation's extracted pages whose current text holds `answer`, read through
 * the conversation (`GET …/memory/pages/{path}?agent=`).
 * @param {{ path: string }[]} pages
 * @param {string} answer
 */
async function pageHolding(pages, answer) {
  for (const { path } of pages) {
    const page = expectStatus("reading a memory page", await call("GET", `${conversationPath}/memory/pages/${path.split("/").map(encodeURIComponent).join("/")}?agent=${DEMO_AGENT_ID}`), [200]);
    if (String(page.content).includes(answer)) return page;
  }
  return undefined;
}

/** Characters of every turn's text: what an agent without Foldline would be sent each time. */
async function conversationChars() {
  const response = expectStatus("reading the turns", await call("GET", `${conversationPath}/turns?limit=500`), [200]);
  return (response.turns ?? []).reduce((sum, turn) => sum + (turn.text?.length ?? 0), 0);
}

try {
  await main();
} catch (error) {
  if (error instanceof DemoError) {
    console.error(`\ndemo: ${error.message}`);
    process.exit(1);
  }
  throw error;
}

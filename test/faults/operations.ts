import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sha256Hex } from "../../src/core/hash";
import { wakeKey } from "../../src/core/wakeups";
import { conversationStub } from "../../src/durable/stub";
import { createApiToken } from "../../src/storage/control/tokens";
import { shardsOf } from "../../src/storage/shards";
import { pair } from "../support/declarations";
import { shardOf } from "../support/shards";
import type { Exchange, Run } from "./harness";
import { is2xx } from "./harness";

/**
 * The public operations the matrix faults, each as the client sees it: what a fresh run sets up
 * (cleanly, before the plan is armed), the one request it retries, and what it can read back to
 * judge the run. Every run works in a conversation (or agent, or page) of its own, so runs share
 * only what the fixtures registered once.
 */

/** Everything a conversation id of this file starts with; the fixtures' token holds it. */
const SCOPE = "api:faults:";
/** Conversations the writer agent serves (source appends, batches, corrections). */
const WRITER_SOURCES = `${SCOPE}w:`;
/** Conversations the replier agent serves: its replies come from the echo bot (a service binding), so every source owes a reply job. */
const REPLIER_SOURCES = `${SCOPE}y:`;
/** Conversations the reader agent serves (context, compose, compaction), with a small policy so one batch opens a plan. */
const READER_SOURCES = `${SCOPE}r:`;
/** Conversations the laggard agent serves: capped at 8 messages, its chain falls behind past 48 uncovered events (`HOT_WINDOW_EVENTS` here). */
const LAGGARD_SOURCES = `${SCOPE}l:`;
const MODEL = "test-model";
/** The reader's compactions go to the fake model (test/fake-openai) through the profile "fake", whose extraction is offline. */
const PROFILE = "fake";
const COMPACTION_QUEUE = "foldline-compaction";

export interface Fixtures {
  /** A token for every conversation of this file and every agent, used by setup only. */
  readonly admin: string;
  readonly writer: string;
  readonly reader: string;
  readonly replier: string;
  readonly laggard: string;
  readonly document: { readonly name: string; readonly hash: string };
}

/** A token of its own for the faulted request, so the first thing the request does is the Worker's token lookup (a cache miss). */
const freshToken = (): Promise<string> => createApiToken(env.DB, "faults", [`${SCOPE}*`, "agent:*"], new Date());

/**
 * A run's number in names and text, at a fixed width: texts and ids of every run have the same
 * length, so sizes (a tail's characters, a budget) compare across runs.
 */
const runNumber = (n: number): string => String(n).padStart(5, "0");
const line = (n: number, i: number): string => `Message ${i} of run ${runNumber(n)}: the team weighs Lisbon against Porto for the offsite; Ada wants flights under ${200 + i} euros.`;
const source = (key: string, messageId: string, text: string) => ({ kind: "source", idempotencyKey: key, body: { messageId, author: { id: "u1", name: "Ada" }, text } });
const edit = (key: string, target: string, text: string) => ({ kind: "correction", idempotencyKey: key, body: { action: "edit", targetMessageId: target, text } });

/** Setup steps must succeed: a setup that fails is the harness's failure, not a finding. */
function expect2xx(x: Exchange, what: string): Exchange {
  if (!is2xx(x)) throw new Error(`setup failed: ${what} answered ${x.status} ${JSON.stringify(x.body).slice(0, 300)}`);
  return x;
}

/** Registers the fixtures' agents and the reader's trusted document, cleanly. */
export async function registerFixtures(run: Run, tag: string): Promise<Fixtures> {
  const admin = await freshToken();
  const writer = `flt-writer-${tag}`;
  const reader = `flt-reader-${tag}`;
  const replier = `flt-replier-${tag}`;
  const laggard = `flt-laggard-${tag}`;
  const content = "You are the offsite planner. Be brief.";
  const document = { name: "identity", hash: sha256Hex(content) };
  expect2xx(await run.fetch("PUT", `/v1/agents/${reader}/documents/identity`, admin, { content }), "document upload");
  expect2xx(await run.fetch("PUT", `/v1/agents/${writer}`, admin, pair({ agentId: writer, sources: [`${WRITER_SOURCES}*`], profile: PROFILE, model: MODEL })), "writer registration");
  expect2xx(
    await run.fetch("PUT", `/v1/agents/${reader}`, admin, pair({ agentId: reader, sources: [`${READER_SOURCES}*`], profile: PROFILE, model: MODEL, trigger: 1_000, retain: 400, admitSensitive: true, documents: [document] })),
    "reader registration",
  );
  expect2xx(
    await run.fetch("PUT", `/v1/agents/${laggard}`, admin, pair({ agentId: laggard, sources: [`${LAGGARD_SOURCES}*`], profile: PROFILE, model: MODEL, trigger: 2_000, retain: 800, maxMessages: 8, admitSensitive: true })),
    "laggard registration",
  );
  const replying = pair({ agentId: replier, sources: [`${REPLIER_SOURCES}*`], profile: PROFILE, model: MODEL });
  expect2xx(await run.fetch("PUT", `/v1/agents/${replier}`, admin, { ...replying, agent: { ...replying.agent, reply: { mode: "service", binding: "ECHO_BOT" } } }), "replier registration");
  return { admin, writer, reader, replier, laggard, document };
}

// ---------------------------------------------------------------------------------------------
// What the matrix reads back, straight from D1 (never through the code under test).

interface EventRow {
  readonly seq: number;
  readonly kind: string;
  readonly idempotency_key: string;
  readonly body: string;
  readonly hash: string;
}

/** The conversation's sources and corrections in order: what its clients wrote. Run events are the object's bookkeeping, which a failed preflight catches up from an alarm (README.md). */
async function clientEvents(conversation: string): Promise<{ kind: string; key: string; body: unknown }[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT seq, kind, idempotency_key, body, lower(hex(hash)) AS hash FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND kind IN ('source', 'correction') ORDER BY seq")
    .bind(conversation)
    .all<EventRow>();
  return results.map((r) => ({ kind: r.kind, key: r.idempotency_key, body: JSON.parse(r.body) as unknown }));
}

async function duplicateKeys(conversation: string): Promise<string[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT idempotency_key AS key, COUNT(*) AS n FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) GROUP BY idempotency_key HAVING COUNT(*) > 1")
    .bind(conversation)
    .all<{ key: string; n: number }>();
  return results.map((r) => `event key ${r.key} stored ${r.n} times`);
}

/** The acknowledged events (an append's or a batch's answer) that are not in the log as acknowledged. */
async function lostEvents(conversation: string, x: Exchange): Promise<string[]> {
  const body = x.body as { event?: AckedEvent; results?: { event: AckedEvent }[] };
  const acked = body.event !== undefined ? [body.event] : (body.results ?? []).map((r) => r.event);
  if (acked.length === 0) return [`a ${x.status} answer acknowledged no event`];
  const lost: string[] = [];
  for (const event of acked) {
    const row = await (await shardOf(conversation)).prepare("SELECT idempotency_key, lower(hex(hash)) AS hash FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND seq = ?").bind(conversation, event.seq).first<{ idempotency_key: string; hash: string }>();
    if (row?.idempotency_key !== event.idempotencyKey || row.hash !== event.hash) lost.push(`acknowledged ${event.idempotencyKey} at seq ${event.seq}; the log holds ${row === null ? "nothing" : row.idempotency_key} there`);
  }
  return lost;
}

interface AckedEvent {
  readonly seq: number;
  readonly idempotencyKey: string;
  readonly hash: string;
}

export interface Incident {
  readonly id: number;
  readonly kind: string;
  readonly code: string;
  readonly runId: string | null;
}

/** The conversation's incidents, oldest first. */
export async function incidents(conversation: string): Promise<Incident[]> {
  const { results } = await (await shardOf(conversation))
    .prepare("SELECT id, kind, code, run_id AS runId FROM incidents WHERE conversation_id = ? ORDER BY id")
    .bind(conversation)
    .all<Incident>();
  return results;
}

// ---------------------------------------------------------------------------------------------

export interface RunState {
  /** The conversation the run works in (incidents are read there), if any. */
  readonly conversation?: string;
  /** Run-specific names, replaced before runs compare (`normalize`). */
  readonly names: Readonly<Record<string, string>>;
}

export interface Operation<S extends RunState = RunState> {
  readonly name: string;
  /** A model fault applies: the operation calls the model (through the fake, test/fake-openai). */
  readonly callsModel: boolean;
  /** The operation goes through the conversation's object, so its clean run must show calls from there. */
  readonly usesObject: boolean;
  /** `queue`: a delivery the queue redelivers (503 = the consumer asked for a retry); `http`: a client's request. */
  readonly transport: "http" | "queue";
  /** A fresh run's state, set up cleanly before the plan is armed. */
  setup(run: Run, n: number, fixtures: Fixtures): Promise<S>;
  /** The request (or delivery), identical on every retry but for the delivery count. */
  attempt(run: Run, state: S, attempt: number): Promise<Exchange>;
  /** What is stored about the operation afterwards, normalized by the caller: must equal a clean run's. */
  stored(state: S): Promise<unknown>;
  /** Anything stored twice. */
  duplicates(state: S): Promise<string[]>;
  /** What a 2xx answer promised that is not stored. */
  lost(state: S, acked: Exchange): Promise<string[]>;
  /** For reads: the answer itself is the product, and must equal a clean run's. */
  readonly answerIsProduct: boolean;
  /** The next requests a client makes on the same conversation (or agent): each must succeed. */
  next(run: Run, state: S, fixtures: Fixtures): Promise<{ what: string; exchange: Exchange }[]>;
}

interface EventState extends RunState {
  readonly conversation: string;
  readonly token: string;
  readonly admin: string;
  readonly body: unknown;
  readonly path: string;
}

const eventsPath = (conversation: string, suffix = "") => `/v1/conversations/${encodeURIComponent(conversation)}/events${suffix}`;

/** Appends, batches and corrections: a conversation served by the writer agent, with `seeded` sources already in it. */
function eventOperation(name: string, seeded: number, request: (n: number, conversation: string) => { path: string; body: unknown }): Operation<EventState> {
  return {
    name,
    callsModel: false,
    usesObject: true,
    transport: "http",
    answerIsProduct: false,
    async setup(run, n, fixtures) {
      const conversation = `${WRITER_SOURCES}${name}:${runNumber(n)}-${crypto.randomUUID().slice(0, 8)}`;
      await run.adopt(conversation);
      for (let i = 0; i < seeded; i++) expect2xx(await run.fetch("POST", eventsPath(conversation), fixtures.admin, source(`m${i}`, `${i}`, line(n, i))), "seed append");
      const { path, body } = request(n, conversation);
      return { conversation, token: await freshToken(), admin: fixtures.admin, body, path, names: { [conversation]: "<conversation>", [`run ${runNumber(n)}`]: "run <n>" } };
    },
    attempt: (run, s) => run.fetch("POST", s.path, s.token, s.body),
    stored: (s) => clientEvents(s.conversation),
    duplicates: (s) => duplicateKeys(s.conversation),
    lost: (s, acked) => lostEvents(s.conversation, acked),
    async next(run, s) {
      return [{ what: "POST a new source", exchange: await run.fetch("POST", eventsPath(s.conversation), s.admin, source("next", "next", "And one more thing.")) }];
    },
  };
}

const appendSource = eventOperation("append", 2, (n, conversation) => ({ path: eventsPath(conversation), body: source("op", "op", `The op message of run ${runNumber(n)}: book the Porto venue.`) }));
const appendBatch = eventOperation("batch", 1, (n, conversation) => ({
  path: eventsPath(conversation, "/batch"),
  body: { events: [source("op-1", "op-1", `First of run ${runNumber(n)}'s batch.`), source("op-2", "op-2", "Second of the batch."), edit("op-3", "0", "Message 0, edited in the batch.")] },
}));
const correction = eventOperation("correction", 2, (n, conversation) => ({ path: eventsPath(conversation), body: edit("op", "1", `Message 1 of run ${runNumber(n)}, corrected: Porto it is.`) }));

interface AgentState extends RunState {
  readonly agent: string;
  readonly token: string;
  readonly body: unknown;
}

/** The control database's declaration rows of an agent, and whether every shard's copy of the revision caught up with the control database's. */
async function declarations(agent: string): Promise<{ rows: unknown[]; behind: string[] }> {
  const { results } = await env.DB.prepare("SELECT revision, compactor_id, epoch_id, registration, prompt_hash FROM declarations WHERE agent_id = ? ORDER BY revision").bind(agent).all();
  const control = await env.DB.prepare("SELECT revision FROM declaration_revision WHERE id = 1").first<{ revision: number }>();
  const behind: string[] = [];
  for (const shard of shardsOf(env)) {
    const copy = await shard.db.prepare("SELECT revision FROM declaration_revision WHERE id = 1").first<{ revision: number }>();
    if ((copy?.revision ?? 0) < (control?.revision ?? 0)) behind.push(`${shard.name}'s revision is ${copy?.revision}, the control database's ${control?.revision}`);
  }
  return { rows: results, behind };
}

const registration: Operation<AgentState> = {
  name: "register",
  callsModel: false,
  usesObject: false,
  transport: "http",
  answerIsProduct: false,
  async setup(_run, n) {
    const agent = `flt-reg-${runNumber(n)}-${crypto.randomUUID().slice(0, 8)}`;
    return { agent, token: await freshToken(), body: pair({ agentId: agent, sources: [`${SCOPE}g:${runNumber(n)}:*`], profile: PROFILE, model: MODEL }), names: { [agent]: "<agent>", [`${SCOPE}g:${runNumber(n)}:`]: "<sources>" } };
  },
  attempt: (run, s) => run.fetch("PUT", `/v1/agents/${s.agent}`, s.token, s.body),
  stored: async (s) => (await declarations(s.agent)).rows,
  async duplicates(s) {
    const { rows } = await declarations(s.agent);
    return rows.length > 1 ? [`one registration stored as ${rows.length} revisions`] : [];
  },
  async lost(s, acked) {
    const { rows, behind } = await declarations(s.agent);
    const answered = acked.body as { revision?: number };
    const lost = rows.some((r) => (r as { revision: number }).revision === answered.revision) ? [] : [`acknowledged revision ${answered.revision} is not stored`];
    // The registration answers after every shard's copy of the revision is raised (api/agents), so
    // the next append of every conversation sees it.
    return [...lost, ...behind.map((b) => `acknowledged registration not published: ${b}`)];
  },
  async next(run, s) {
    return [
      { what: "GET the agent", exchange: await run.fetch("GET", `/v1/agents/${s.agent}`, s.token) },
      { what: "PUT the same registration again", exchange: await run.fetch("PUT", `/v1/agents/${s.agent}`, s.token, s.body) },
    ];
  },
};

interface PageState extends RunState {
  readonly agent: string;
  readonly path: string;
  readonly token: string;
  readonly body: { content: string };
}

async function pageVersions(agent: string, path: string): Promise<{ version: number; content_hash: string; deleted: number }[]> {
  const { results } = await env.DB.prepare("SELECT version, content_hash, deleted FROM memory_page_versions WHERE agent_id = ? AND path = ? ORDER BY version").bind(agent, path).all<{ version: number; content_hash: string; deleted: number }>();
  return results;
}

const memoryPage: Operation<PageState> = {
  name: "memory-page",
  callsModel: false,
  usesObject: false,
  transport: "http",
  answerIsProduct: false,
  async setup(_run, n, fixtures) {
    const path = `faults/run-${runNumber(n)}-${crypto.randomUUID().slice(0, 8)}`;
    return { agent: fixtures.writer, path, token: await freshToken(), body: { content: "Ada prefers Porto and flights under 250 euros." }, names: { [path]: "<path>", [fixtures.writer]: "<agent>" } };
  },
  attempt: (run, s) => run.fetch("PUT", `/v1/agents/${s.agent}/memory/${s.path}`, s.token, s.body),
  stored: (s) => pageVersions(s.agent, s.path),
  async duplicates(s) {
    const versions = await pageVersions(s.agent, s.path);
    return versions.length > 1 ? [`one page write stored as ${versions.length} versions`] : [];
  },
  async lost(s, acked) {
    const answered = acked.body as { version?: number; contentHash?: string };
    const versions = await pageVersions(s.agent, s.path);
    return versions.some((v) => v.version === answered.version && v.content_hash === answered.contentHash) ? [] : [`acknowledged version ${answered.version} is not stored`];
  },
  async next(run, s) {
    return [
      { what: "GET the page", exchange: await run.fetch("GET", `/v1/agents/${s.agent}/memory/${s.path}`, s.token) },
      { what: "PUT another page", exchange: await run.fetch("PUT", `/v1/agents/${s.agent}/memory/${s.path}-next`, s.token, { content: "Another note." }) },
    ];
  },
};

interface ReaderState extends RunState {
  readonly conversation: string;
  readonly agent: string;
  readonly token: string;
  readonly admin: string;
  /** The compaction job of the plan the setup opened (none for `append-plans`). */
  readonly job: unknown;
  readonly runId: string;
}

/** Enough sources in one batch to pass the reader's trigger: the object plans a compaction after the write. */
async function seedPlanned(run: Run, n: number, fixtures: Fixtures, kind: string): Promise<ReaderState> {
  const conversation = `${READER_SOURCES}${kind}:${runNumber(n)}-${crypto.randomUUID().slice(0, 8)}`;
  await run.adopt(conversation);
  const events = Array.from({ length: 12 }, (_, i) => source(`m${i}`, `${i}`, line(n, i)));
  expect2xx(await run.fetch("POST", eventsPath(conversation, "/batch"), fixtures.admin, { events }), "seed batch");
  const plan = await (await shardOf(conversation))
    .prepare("SELECT run_id, packet_key, packet_hash FROM compaction_plans WHERE conversation_id = ? AND agent_id = ?")
    .bind(conversation, fixtures.reader)
    .first<{ run_id: string; packet_key: string; packet_hash: string }>();
  if (plan === null) throw new Error(`setup failed: the seed batch opened no plan in ${conversation}`);
  const job = { type: "compaction", conversationId: conversation, agentId: fixtures.reader, runId: plan.run_id, packetKey: plan.packet_key, packetHash: plan.packet_hash, model: MODEL, profile: PROFILE };
  return { conversation, agent: fixtures.reader, token: await freshToken(), admin: fixtures.admin, job, runId: plan.run_id, names: { [conversation]: "<conversation>", [`run ${runNumber(n)}`]: "run <n>", [fixtures.reader]: "<agent>" } };
}

/** A planned conversation whose plan settled cleanly, and two sources after it: a boundary, its packet in R2, and a tail. */
async function seedSettled(run: Run, n: number, fixtures: Fixtures, kind: string): Promise<ReaderState> {
  const state = await seedPlanned(run, n, fixtures, kind);
  const delivered = await run.deliver(COMPACTION_QUEUE, state.job, 1);
  if (delivered.status !== 200) throw new Error(`setup failed: the seed compaction answered ${delivered.status} ${JSON.stringify(delivered.body)}`);
  for (const i of [12, 13]) expect2xx(await run.fetch("POST", eventsPath(state.conversation), fixtures.admin, source(`m${i}`, `${i}`, line(n, i))), "tail append");
  return state;
}

/**
 * A source append that passes the reader's trigger: within the request the object writes the
 * source, plans a compaction (its packet to R2, the plan to the shard) and sends the job to the
 * queue, so the client's append reaches every binding.
 */
const appendPlanning: Operation<ReaderState> = {
  name: "append-plans",
  callsModel: false,
  usesObject: true,
  transport: "http",
  answerIsProduct: false,
  async setup(run, n, fixtures) {
    const conversation = `${READER_SOURCES}append-plans:${runNumber(n)}-${crypto.randomUUID().slice(0, 8)}`;
    await run.adopt(conversation);
    const events = Array.from({ length: 7 }, (_, i) => source(`m${i}`, `${i}`, line(n, i)));
    expect2xx(await run.fetch("POST", eventsPath(conversation, "/batch"), fixtures.admin, { events }), "seed batch");
    const planned = await (await shardOf(conversation)).prepare("SELECT COUNT(*) AS n FROM compaction_plans WHERE conversation_id = ?").bind(conversation).first<{ n: number }>();
    if (planned?.n !== 0) throw new Error(`setup failed: the seed batch of append-plans already opened a plan in ${conversation}`);
    return { conversation, agent: fixtures.reader, token: await freshToken(), admin: fixtures.admin, job: undefined, runId: "", names: { [conversation]: "<conversation>", [`run ${runNumber(n)}`]: "run <n>", [fixtures.reader]: "<agent>" } };
  },
  attempt: (run, s) => run.fetch("POST", eventsPath(s.conversation), s.token, source("op", "op", `${"The long op message that passes the trigger: Porto, the garden venue, flights under 250 euros. ".repeat(4)}`)),
  stored: chainState,
  duplicates: (s) => duplicateKeys(s.conversation),
  lost: (s, acked) => lostEvents(s.conversation, acked),
  async next(run, s) {
    return [
      { what: "POST a new source", exchange: await run.fetch("POST", eventsPath(s.conversation), s.admin, source("next", "next", "And one more thing.")) },
      { what: "GET the context", exchange: await run.fetch("GET", contextPath(s), s.admin) },
    ];
  },
};

const contextPath = (s: ReaderState) => `/v1/conversations/${encodeURIComponent(s.conversation)}/context?agent=${s.agent}`;

/** Everything about the chain that a clean compaction decides: each boundary's position, coverage and content, and which plans are open. */
async function chainState(s: ReaderState): Promise<unknown> {
  const db = await shardOf(s.conversation);
  const { results: boundaries } = await db.prepare("SELECT position, covered_through_seq, body FROM boundaries WHERE conversation_id = ? ORDER BY position").bind(s.conversation).all<{ position: number; covered_through_seq: number; body: string }>();
  const { results: open } = await db
    .prepare("SELECT run_id FROM compaction_plans p WHERE conversation_id = ? AND NOT EXISTS (SELECT 1 FROM boundaries b WHERE b.run_id = p.run_id)")
    .bind(s.conversation)
    .all<{ run_id: string }>();
  return {
    boundaries: boundaries.map((b) => {
      const body = JSON.parse(b.body) as { content?: unknown; coveredThrough?: unknown };
      return { position: b.position, coveredThrough: body.coveredThrough, content: body.content };
    }),
    openPlans: open.length,
    events: await clientEvents(s.conversation),
  };
}

function readOperation(name: string, request: (run: Run, s: ReaderState) => Promise<Exchange>): Operation<ReaderState> {
  return {
    name,
    callsModel: false,
    usesObject: true,
    transport: "http",
    answerIsProduct: true,
    setup: (run, n, fixtures) => seedSettled(run, n, fixtures, name),
    attempt: (run, s) => request(run, s),
    stored: chainState,
    duplicates: (s) => duplicateKeys(s.conversation),
    lost: async () => [],
    async next(run, s) {
      return [
        { what: "POST a new source", exchange: await run.fetch("POST", eventsPath(s.conversation), s.admin, source("next", "next", "And one more thing.")) },
        { what: "GET the context", exchange: await run.fetch("GET", contextPath(s), s.admin) },
      ];
    },
  };
}

const contextRead = readOperation("context", (run, s) => run.fetch("GET", contextPath(s), s.token));
const compose = readOperation("compose", (run, s) =>
  run.fetch("POST", `/v1/conversations/${encodeURIComponent(s.conversation)}/compose`, s.token, { agent: s.agent, prompt: { text: "Which city did we pick?" } }),
);

/** A compaction job delivered to the Worker's queue consumer; the queue's redelivery is the retry. */
const compaction: Operation<ReaderState> = {
  name: "compaction",
  callsModel: true,
  usesObject: true,
  transport: "queue",
  answerIsProduct: false,
  setup: (run, n, fixtures) => seedPlanned(run, n, fixtures, "compaction"),
  attempt: (run, s, attempt) => run.deliver(COMPACTION_QUEUE, s.job, attempt),
  stored: chainState,
  duplicates: (s) => duplicateKeys(s.conversation),
  async lost(s) {
    // Acked is done: the queue never delivers it again, so the boundary must exist, and so must
    // the object's deadline for the extraction it owes: the consumer's one send of that job is
    // the only other, and it may be the call that failed (durable/extraction-watch).
    const row = await (await shardOf(s.conversation)).prepare("SELECT 1 AS found FROM boundaries WHERE run_id = ?").bind(s.runId).first();
    if (row === null) return [`the job was acked, and run ${s.runId} has no boundary`];
    const owed = await runInDurableObject(conversationStub(env, s.conversation), (_instance, state) => state.storage.get(wakeKey.extraction(s.runId)));
    return owed === undefined ? [`the job was acked, and nothing keeps the extraction of run ${s.runId}'s boundary owed`] : [];
  },
  async next(run, s) {
    const context = await run.fetch("GET", contextPath(s), s.admin);
    const served = (context.body as { manifest?: { boundary?: unknown } } | null)?.manifest?.boundary;
    const exchange: Exchange = is2xx(context) && (served === null || served === undefined) ? { ...context, status: 599, code: "no_boundary_served" } : context;
    return [
      { what: "GET the context (serving the new boundary)", exchange },
      { what: "POST a new source", exchange: await run.fetch("POST", eventsPath(s.conversation), s.admin, source("next", "next", "And one more thing.")) },
    ];
  },
};

/** The laggard's open plan, as its job (`seedPlanned`'s, for the laggard). */
async function openPlanJob(conversation: string, agent: string): Promise<{ job: unknown; runId: string }> {
  const plan = await (await shardOf(conversation))
    .prepare("SELECT run_id, packet_key, packet_hash FROM compaction_plans p WHERE conversation_id = ? AND agent_id = ? AND NOT EXISTS (SELECT 1 FROM boundaries b WHERE b.run_id = p.run_id)")
    .bind(conversation, agent)
    .first<{ run_id: string; packet_key: string; packet_hash: string }>();
  if (plan === null) throw new Error(`setup failed: no open plan in ${conversation}`);
  return { job: { type: "compaction", conversationId: conversation, agentId: agent, runId: plan.run_id, packetKey: plan.packet_key, packetHash: plan.packet_hash, model: MODEL, profile: PROFILE }, runId: plan.run_id };
}

/**
 * A compaction that catches a chain up (durable/hot-chain `behind`): one 70-source batch puts the
 * laggard past its bound before it ever planned, so it holds the oldest 48 and plans from them. The
 * faulted delivery runs that plan: the chain reads the log on to its end, holds its whole history
 * again, and serves context.
 */
const compactionBehind: Operation<ReaderState> = {
  ...compaction,
  name: "compaction-behind",
  async setup(run, n, fixtures) {
    const conversation = `${LAGGARD_SOURCES}compaction-behind:${runNumber(n)}-${crypto.randomUUID().slice(0, 8)}`;
    await run.adopt(conversation);
    const events = Array.from({ length: 70 }, (_, i) => source(`m${i}`, `${i}`, line(n, i)));
    expect2xx(await run.fetch("POST", eventsPath(conversation, "/batch"), fixtures.admin, { events }), "seed batch");
    const state = await conversationStub(env, conversation).describeChain(conversation, fixtures.laggard);
    if (state?.behindThroughSeq === null || state?.openRunId === null) throw new Error(`setup failed: the laggard is not behind with a plan open in ${conversation}`);
    const { job, runId } = await openPlanJob(conversation, fixtures.laggard);
    return { conversation, agent: fixtures.laggard, token: await freshToken(), admin: fixtures.admin, job, runId, names: { [conversation]: "<conversation>", [`run ${runNumber(n)}`]: "run <n>", [fixtures.laggard]: "<agent>" } };
  },
};

/** The reply jobs the queue took so far (the faults config's recorder consumer keeps every message). */
async function queuedReplies(): Promise<{ conversationId: string; agentId: string; sourceSeq: number }[]> {
  const sent = (await (await env.QUEUE_RECORDER.fetch("http://recorder/")).json()) as { type?: string; conversationId: string; agentId: string; sourceSeq: number }[];
  return sent.filter((job) => job.type === "reply");
}

/** The reply hand-offs the conversation's object keeps armed: the sources each names. */
async function armedHandoffs(conversation: string): Promise<number[]> {
  const armed = await runInDurableObject(conversationStub(env, conversation), async (_instance, state) => [...(await state.storage.list({ prefix: "wake:reply:" })).values()]);
  return armed.flatMap((wake) => ((wake as { sources?: { seq: number }[] }).sources ?? []).map((s) => s.seq));
}

/**
 * A source append in a conversation an agent replies in: the write, then the reply job handed to
 * the queue (`durable/reply-handoff`). Whatever call fails, an acknowledged source's job is either
 * taken by the queue or kept armed in the object, whose deadline sends it.
 */
const appendReplies: Operation<EventState & { readonly agent: string }> = {
  ...(eventOperation("append-replies", 2, () => ({ path: "", body: null })) as unknown as Operation<EventState & { readonly agent: string }>),
  async setup(run, n, fixtures) {
    const conversation = `${REPLIER_SOURCES}append-replies:${runNumber(n)}-${crypto.randomUUID().slice(0, 8)}`;
    await run.adopt(conversation);
    for (let i = 0; i < 2; i++) expect2xx(await run.fetch("POST", eventsPath(conversation), fixtures.admin, source(`m${i}`, `${i}`, line(n, i))), "seed append");
    const body = source("op", "op", `The op message of run ${runNumber(n)}: who books the Porto venue?`);
    return { conversation, agent: fixtures.replier, token: await freshToken(), admin: fixtures.admin, body, path: eventsPath(conversation), names: { [conversation]: "<conversation>", [`run ${runNumber(n)}`]: "run <n>", [fixtures.replier]: "<agent>" } };
  },
  async lost(s, acked) {
    const lost = await lostEvents(s.conversation, acked);
    const seq = (acked.body as { event?: { seq?: number } }).event?.seq;
    if (seq === undefined) return lost;
    if ((await armedHandoffs(s.conversation)).includes(seq)) return lost;
    // Not armed: the queue must have taken its job (a delivery reaches the recorder within moments).
    for (let waited = 0; waited < 3_000; waited += 100) {
      if ((await queuedReplies()).some((job) => job.conversationId === s.conversation && job.agentId === s.agent && job.sourceSeq === seq)) return lost;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return [...lost, `acknowledged source ${seq}: no reply job was taken by the queue and none is kept armed`];
  },
};

export const OPERATIONS: readonly Operation[] = [appendSource, appendReplies, appendPlanning, appendBatch, correction, registration, memoryPage, contextRead, compose, compaction, compactionBehind] as unknown as readonly Operation[];

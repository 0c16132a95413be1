// The example bot (examples/telegram-bot) and Foldline running together, each a Worker under
// `wrangler dev` on its own loopback port, the bot's `FOLDLINE` service binding reaching Foldline's
// RPC entrypoint through wrangler's dev registry — a registry of this run's own (a temporary
// WRANGLER_REGISTRY_PATH), so no other wrangler on the machine can answer for "foldline".
// Telegram is the tests' loopback fake Bot API (test/fake-telegram), the model the tests' loopback
// fake OpenAI endpoint (test/fake-openai), both run in this process; `npm run test:example-bot`,
// run by .ci/run.
//
// The Worker, the client and the example are copied at start (scripts/lib/worker.mjs says why),
// the client built there (dist/, as `npm pack` builds it) and linked into the example as the
// package it installs, so the bot runs (and type-checks against) exactly the shipped
// `foldline/grammy` and `foldline/client`.
// A group chat long enough to compact under a small policy is posted to the bot's webhook as
// Telegram posts it; the bot answers the messages that name it. Then: the replies reached the Bot
// API, Foldline's log holds every message as a `source`, an edit as a `correction`, every reply as
// a `proposal` and its `delivery` with the Telegram message id, a compaction settled and the chain
// verifies. Nothing is timed: every wait polls until its condition holds, with a generous deadline.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { ROOT } from "../../scripts/lib/local-state.mjs";
import { applyMigrations, createToken, freePort, snapshotApp, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { startFakeOpenAi } from "../fake-openai/server.ts";
import { FIRST_MESSAGE_ID, startFakeTelegram } from "../fake-telegram/server.ts";

const scratch = mkdtempSync(join(tmpdir(), "foldline-example-bot-"));
// Service bindings between the two wrangler sessions resolve through this run's registry only.
process.env.WRANGLER_REGISTRY_PATH = join(scratch, "registry");

const BOT_ID = 4200000077;
const BOT_USERNAME = "foldline_example_bot";
const BOT_TOKEN = `${BOT_ID}:example-bot-token`;
const WEBHOOK_SECRET = "example-webhook-secret";
const AGENT = "helper";
const CHAT = { id: -1001234567077, type: "supergroup", title: "Offsite planning" };
const CONVERSATION = `telegram:${BOT_ID}:${CHAT.id}`;
const PEOPLE = [
  { id: 501, is_bot: false, first_name: "Ada", username: "ada" },
  { id: 502, is_bot: false, first_name: "Grace", username: "grace" },
  { id: 503, is_bot: false, first_name: "Linus" },
];
/** The model's and the Bot API's sessions on the fakes: this file's own. */
const SESSION = "example-bot";

/** Generous: two Workers and a compaction on a busy two-core machine. Polls end as soon as their condition holds. */
const DEADLINE_MS = 300_000;
const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** @template T @param {string} what @param {() => Promise<T | undefined>} probe */
async function eventually(what, probe) {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(500);
  }
}

/** What the people say: a few dozen messages, every fifth one asking the bot. */
function conversation() {
  const topics = ["the venue", "the dates", "the flights", "the budget", "the agenda", "dinner", "the hotel", "the workshop"];
  return Array.from({ length: 36 }, (_, i) => {
    const topic = topics[i % topics.length];
    const asks = i % 5 === 4;
    const text = asks
      ? `@${BOT_USERNAME} what did we decide about ${topic} so far? (question ${i + 1})`
      : `Note ${i + 1} on ${topic}: let us keep it simple, book early, and confirm with everyone by Friday.`;
    return { from: PEOPLE[i % PEOPLE.length], text, asks };
  });
}

describe("the example bot with Foldline, Telegram and the model on loopback", () => {
  /** @type {Awaited<ReturnType<typeof startWorker>> | undefined} */
  let foldline;
  /** @type {Awaited<ReturnType<typeof startWorker>> | undefined} */
  let bot;
  /** @type {Awaited<ReturnType<typeof startFakeOpenAi>> | undefined} */
  let model;
  /** @type {Awaited<ReturnType<typeof startFakeTelegram>> | undefined} */
  let telegram;
  let operatorToken = "";
  /** @type {import("../../client/index.ts").FoldlineClient | undefined} */
  let operator;

  before(async () => {
    model = await startFakeOpenAi();
    telegram = await startFakeTelegram();

    const appDir = join(scratch, "app");
    snapshotApp(ROOT, appDir, "worktree");
    // The shipped package, built as `npm pack` builds it, beside the Worker's sources.
    for (const name of ["client", "tsconfig.client.json"]) cpSync(join(ROOT, name), join(appDir, name), { recursive: true });
    const tsc = spawnSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.client.json"], { cwd: appDir, encoding: "utf8", timeout: 300_000 });
    assert.equal(tsc.status, 0, `building the client failed:\n${tsc.stdout}\n${tsc.stderr}`);
    // The example, with `foldline` installed as its package.json says (file:../..): a link to the package.
    const botDir = join(appDir, "examples", "telegram-bot");
    cpSync(join(ROOT, "examples", "telegram-bot"), botDir, { recursive: true, filter: (path) => !/[/\\](node_modules|\.wrangler|\.dev\.vars)$/.test(path) });
    mkdirSync(join(botDir, "node_modules"));
    symlinkSync(appDir, join(botDir, "node_modules", "foldline"), "dir");

    const persistDir = join(scratch, "state");
    applyMigrations(ROOT, appDir, persistDir);
    operatorToken = createToken(ROOT, appDir, persistDir, [`telegram:${BOT_ID}:*`, `agent:${AGENT}*`], "example-operator");
    // The bot's own token: its chats and its agent, nothing else.
    const botToken = createToken(ROOT, appDir, persistDir, [`telegram:${BOT_ID}:*`, `agent:${AGENT}`], "example-bot");

    const foldlineEnv = join(scratch, "foldline.env");
    await writeEnvFile(foldlineEnv, { OPENAI_API_KEY: "fake-key", OPENAI_BASE_URL: model.baseUrl });
    foldline = await startWorker({ root: ROOT, appDir, persistDir, envFile: foldlineEnv, port: await freePort(0), logPath: join(scratch, "foldline.log"), log: () => {} });

    const botEnv = join(scratch, "bot.env");
    await writeEnvFile(botEnv, {
      BOT_TOKEN,
      WEBHOOK_SECRET,
      FOLDLINE_TOKEN: botToken,
      AGENT_ID: AGENT,
      OPENAI_API_KEY: "fake-key",
      OPENAI_BASE_URL: `${model.origin}/s/${SESSION}/v1`,
      TELEGRAM_API_ROOT: `${telegram.origin}/s/${SESSION}`,
    });
    // JSON in single quotes, which a .dev.vars file takes literally (inside double quotes its own quotes would need escapes).
    const botInfo = { id: BOT_ID, is_bot: true, first_name: "Helper", username: BOT_USERNAME, can_join_groups: true, can_read_all_group_messages: true, supports_inline_queries: false };
    appendFileSync(botEnv, `BOT_INFO='${JSON.stringify(botInfo)}'\n`);
    bot = await startWorker({
      root: ROOT,
      appDir: botDir,
      persistDir: join(scratch, "bot-state"),
      envFile: botEnv,
      port: await freePort(0),
      logPath: join(scratch, "bot.log"),
      log: () => {},
      // The bot answers anything but its webhook with its own 404.
      ready: { path: "/", status: 404 },
    });

    const { createClient } = await import(pathToFileURL(join(appDir, "dist", "client", "index.js")).href);
    operator = createClient({ baseUrl: foldline.url, token: operatorToken });
  });

  after(async () => {
    await bot?.stop();
    await foldline?.stop();
    await telegram?.close();
    await model?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  test("type-checks against the shipped .d.ts of foldline/client and foldline/grammy", () => {
    const botDir = join(scratch, "app", "examples", "telegram-bot");
    const tsc = spawnSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], { cwd: botDir, encoding: "utf8", timeout: 300_000 });
    assert.equal(tsc.status, 0, `tsc in examples/telegram-bot failed:\n${tsc.stdout}\n${tsc.stderr}`);
  });

  test("records the chat, the bot's replies and an edit, compacts, and verifies", { timeout: 900_000 }, async () => {
    try {
      await conversationRoundTrip();
    } catch (error) {
      // What the two Workers logged, with the failure: the scratch directory is gone after the run.
      const logs = `--- the bot's wrangler log:\n${logTail(join(scratch, "bot.log"))}\n--- Foldline's wrangler log:\n${logTail(join(scratch, "foldline.log"))}`;
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs}`, { cause: error });
    }
  });

  async function conversationRoundTrip() {
    assert.ok(operator !== undefined && bot !== undefined && telegram !== undefined && model !== undefined);
    const registered = await operator.registerAgent(AGENT, {
      agent: {
        id: AGENT,
        compactorId: `${AGENT}.compactor`,
        enabled: true,
        provider: { profile: "default", model: "gpt-4o-mini" },
        sources: [`telegram:${BOT_ID}:*`],
        admitSensitive: true,
        historyAgents: [AGENT],
        documents: [],
        documentBudgetChars: 4000,
      },
      compactor: {
        id: `${AGENT}.compactor`,
        targetId: AGENT,
        enabled: true,
        provider: { profile: "default", model: "gpt-4o-mini" },
        sources: [`telegram:${BOT_ID}:*`],
        admitSensitive: true,
        historyAgents: [AGENT],
        documents: [],
        documentBudgetChars: 4000,
        // Small, so a few dozen messages compact; a real deployment keeps the defaults.
        policy: { triggerInputChars: 2000, retainInputChars: 1000, maxFrozenChars: 4000 },
        outputMode: "projection",
      },
    });
    assert.equal(registered.agentId, AGENT);

    const said = conversation();
    const asked = said.filter((line) => line.asks).length;
    // The bot's answers, in the order it will ask for them.
    const replies = Array.from({ length: asked }, (_, i) => `Answer ${i + 1}: Lisbon, in May, as the group agreed.`);
    await fetch(`${model.origin}/s/${SESSION}/__script`, { method: "POST", body: JSON.stringify(replies.map((content) => ({ content }))) });

    let updateId = 90_000;
    const sentAt = Math.floor(Date.now() / 1000) - 3_600;
    /** Posts one update as Telegram does, again after any answer but 200 (Telegram redelivers; the plugin records it once). */
    const deliver = async (/** @type {object} */ update) => {
      const body = JSON.stringify({ update_id: updateId++, ...update });
      await eventually("the bot's webhook to take an update", async () => {
        const response = await fetch(`${bot?.url}/telegram/webhook`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": WEBHOOK_SECRET },
          body,
        }).catch(() => undefined);
        await response?.arrayBuffer();
        return response?.status === 200 ? true : undefined;
      });
    };

    // A stranger without the secret is refused before anything is recorded.
    const forged = await fetch(`${bot.url}/telegram/webhook`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ update_id: 1, message: { message_id: 1, date: sentAt, chat: CHAT, from: PEOPLE[0], text: "forged" } }) });
    assert.equal(forged.status, 401, (await forged.text()).slice(0, 500));

    /** @type {Map<number, string>} Telegram message id → text, of what the people said */
    const posted = new Map();
    for (const [i, line] of said.entries()) {
      const messageId = 10 + i;
      posted.set(messageId, line.text);
      await deliver({ message: { message_id: messageId, date: sentAt + i * 60, chat: CHAT, from: line.from, text: line.text } });
    }
    // Ada fixes her first message; the edit is a correction of it, whatever was compacted since.
    const edited = { messageId: 10, text: "Note 1 on the venue: Lisbon it is, book early, confirm by Friday." };
    await deliver({ edited_message: { message_id: edited.messageId, date: sentAt, edit_date: sentAt + 3_000, chat: CHAT, from: said[0]?.from, text: edited.text } });

    // The replies reached the Bot API: one sendMessage per question, into the chat, answering it.
    const telegramCalls = await (await fetch(`${telegram.origin}/s/${SESSION}/__requests`)).json();
    const sends = telegramCalls.filter((/** @type {{ method: string }} */ call) => call.method === "sendMessage");
    assert.deepEqual(
      sends.map((/** @type {{ body: any }} */ call) => [call.body.chat_id, call.body.reply_parameters?.message_id, call.body.text]),
      [...posted].filter(([id]) => said[id - 10]?.asks).map(([id], i) => [CHAT.id, id, replies[i]]),
    );
    // The fake gives the sent messages ids counting up from FIRST_MESSAGE_ID.
    const sentIds = sends.map((/** @type {unknown} */ _, i) => FIRST_MESSAGE_ID + i);

    // Foldline's log: every message a source, the edit a correction, each reply a proposal and its delivery.
    const events = await eventually("the log to hold every reply", async () => {
      const all = await readLog(operator, CONVERSATION);
      return all.filter((e) => e.kind === "delivery").length >= sends.length ? all : undefined;
    });
    const sources = events.filter((e) => e.kind === "source");
    assert.deepEqual(
      sources.map((e) => [e.idempotencyKey, e.body.messageId, e.body.text, e.body.conversationType]),
      [...posted].map(([id, text], i) => [`grammy:update:${90_000 + i}`, String(id), text, "group"]),
    );
    assert.deepEqual(
      events.filter((e) => e.kind === "correction").map((e) => [e.body.action, e.body.targetMessageId, e.body.text]),
      [["edit", String(edited.messageId), edited.text]],
    );
    const proposals = events.filter((e) => e.kind === "proposal");
    const deliveries = events.filter((e) => e.kind === "delivery");
    assert.deepEqual(
      proposals.map((e) => [e.body.proposalId, e.body.agentId, e.body.replyToMessageId, e.body.text]),
      sends.map((/** @type {{ body: any }} */ call, i) => [`tg-${sentIds[i]}`, AGENT, String(call.body.reply_parameters.message_id), call.body.text]),
    );
    assert.deepEqual(
      deliveries.map((e) => [e.body.status, e.body.proposalId, e.body.externalMessageId]),
      sentIds.map((id) => ["delivered", `tg-${id}`, String(id)]),
    );
    // Each reply follows its question in the log, and its delivery follows the proposal.
    for (const proposal of proposals) {
      const question = sources.find((e) => e.body.messageId === proposal.body.replyToMessageId);
      const delivery = deliveries.find((e) => e.body.proposalId === proposal.body.proposalId);
      assert.ok(question !== undefined && delivery !== undefined && question.seq < proposal.seq && proposal.seq < delivery.seq);
    }

    // A compaction settled: the chain has a boundary, and nothing is in flight.
    const chain = await eventually("a boundary in the chain", async () => {
      const listed = await operator?.request("get", "/v1/conversations/{conversation}/chain", { path: { conversation: CONVERSATION }, query: { agent: AGENT } });
      return listed !== undefined && listed.boundaries.some((b) => b.current) && listed.health?.openPlan === null ? listed : undefined;
    });
    assert.ok(chain.boundaries.length >= 1);

    // The chain verifies: every link re-hashed from the log and the packets.
    const audit = await operator.request("get", "/v1/conversations/{conversation}/verify", { path: { conversation: CONVERSATION }, query: { agent: AGENT } });
    assert.equal(audit.valid, true, JSON.stringify(audit).slice(0, 2_000));

    // And the agent is served its own replies as assistant turns, as when Foldline dispatches them.
    const context = await operator.context(CONVERSATION, { agent: AGENT });
    const served = context.messages.map((m) => m.content).join("\n");
    const lastReply = replies.at(-1) ?? "";
    assert.ok(context.messages.some((m) => m.role === "assistant" && m.content === lastReply), served.slice(-2_000));
  }
});

/** The last lines of a log, without wrangler's colours. @param {string} path */
function logTail(path) {
  try {
    return readFileSync(path, "utf8").replace(/\x1b\[[0-9;]*m/g, "").trim().split("\n").slice(-40).join("\n");
  } catch {
    return "(no log)";
  }
}

/**
 * The whole log of a conversation, oldest first, through the packed client's typed `request`.
 * @param {import("../../client/index.ts").FoldlineClient | undefined} client @param {string} conversation
 * @returns {Promise<any[]>}
 */
async function readLog(client, conversation) {
  assert.ok(client !== undefined);
  /** @type {any[]} */
  const events = [];
  let after = 0;
  for (;;) {
    const page = await client.request("get", "/v1/conversations/{conversation}/events", { path: { conversation }, query: { after, limit: 500 } });
    events.push(...page.events);
    if (page.nextAfter === null || page.events.length === 0) return events;
    after = page.nextAfter;
  }
}

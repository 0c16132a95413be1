// The report's cost section (§10): the measured usage per 1,000 messages (lib/cost-phase.mjs) and
// what a bot in 1,000 groups at 100 messages a day would pay for it a month at Cloudflare's
// published prices. The prices are data, dated; every usage figure comes from the run.

/** Cloudflare's published Workers Paid prices, as read on their pricing pages on this date. */
export const PRICES = {
  date: "2026-11-30",
  sources: [
    "https://developers.cloudflare.com/workers/platform/pricing/",
    "https://developers.cloudflare.com/d1/platform/pricing/",
    "https://developers.cloudflare.com/r2/pricing/",
    "https://developers.cloudflare.com/queues/platform/pricing/",
    "https://developers.cloudflare.com/durable-objects/platform/pricing/",
  ],
  workersPaidMonthly: 5,
  workerRequests: { included: 10e6, perMillion: 0.3 },
  d1RowsRead: { included: 25e9, perMillion: 0.001 },
  d1RowsWritten: { included: 50e6, perMillion: 1.0 },
  d1StorageGb: { included: 5, perGbMonth: 0.75 },
  r2StorageGb: { included: 10, perGbMonth: 0.015 },
  r2ClassA: { included: 1e6, perMillion: 4.5 },
  r2ClassB: { included: 10e6, perMillion: 0.36 },
  /** One operation per 64 KB written, read or deleted: a message is written, read and deleted once, a retry is read again. */
  queueOperations: { included: 1e6, perMillion: 0.4 },
  objectRequests: { included: 1e6, perMillion: 0.15 },
};

/** The scenario of the issue: a bot in 1,000 groups, 100 messages a day each, a 30-day month. */
export const SCENARIO = { groups: 1_000, messagesPerDay: 100, days: 30 };

const n = (/** @type {number} */ v, digits = 0) => (Number.isFinite(v) ? v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "–");
const usd = (/** @type {number} */ v) => `$${n(v, 2)}`;
/** A unit price as published: as many decimals as it has (up to 4), at least 2. */
const price = (/** @type {number} */ v) => `$${v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;
/** The largest a D1 database may grow (Workers Paid). */
const D1_DATABASE_LIMIT_GB = 10;
const GB = 1e9;

/**
 * The month's bill, line by line, for `per1000` (the run's usage per 1,000 messages) at `messages` a month.
 * Storage is what one month adds, billed as held through the next month; after `months` months the
 * store holds that many months of it.
 * @param {any} c the cost metrics @param {number} messages @param {number} months
 */
export function monthlyBill(c, messages, months = 1) {
  const u = c.per1000Messages;
  const k = messages / 1000;
  const queueOperations = (u.queueSent * 3 + u.queueRetried) * k;
  /** @type {[string, number, { included: number, perMillion?: number, perGbMonth?: number }, string][]} */
  const lines = [
    ["Worker requests (one per appended event)", c.workerRequestsPer1000Messages * k, PRICES.workerRequests, "requests"],
    ["D1 rows read", u.d1RowsRead * k, PRICES.d1RowsRead, "rows"],
    ["D1 rows written", u.d1RowsWritten * k, PRICES.d1RowsWritten, "rows"],
    [`D1 storage after ${months} month(s)`, (u.d1Bytes * k * months) / GB, PRICES.d1StorageGb, "GB"],
    ["R2 Class A operations", u.r2ClassA * k, PRICES.r2ClassA, "operations"],
    ["R2 Class B operations", u.r2ClassB * k, PRICES.r2ClassB, "operations"],
    [`R2 storage after ${months} month(s)`, (u.r2Bytes * k * months) / GB, PRICES.r2StorageGb, "GB"],
    ["Queue operations (3 per message, 1 per retry)", queueOperations, PRICES.queueOperations, "operations"],
    ["Durable Object requests (RPC calls and alarms)", u.objectRequests * k, PRICES.objectRequests, "requests"],
  ];
  const rows = lines.map(([item, used, tariff, unit]) => {
    const billable = Math.max(0, used - tariff.included);
    const cost = tariff.perMillion !== undefined ? (billable / 1e6) * tariff.perMillion : billable * (tariff.perGbMonth ?? 0);
    const rate = tariff.perMillion !== undefined ? `${price(tariff.perMillion)} per million` : `${price(tariff.perGbMonth ?? 0)} per GB-month`;
    return { item, used, unit, included: tariff.included, rate, cost };
  });
  const total = PRICES.workersPaidMonthly + rows.reduce((sum, r) => sum + r.cost, 0);
  return { rows, total };
}

/**
 * The floor the log's guarantees set (`lib/log-floor.mjs`) beside what the log and the turn index take.
 * @param {any} s @param {(bytes: number) => string} per @param {(bytes: number) => string} times
 */
function floorLines(s, per, times) {
  const f = s.floor;
  if (f === undefined) return [];
  const index = s.parts["turn index"] ?? 0;
  return [
    "",
    `**The floor the guarantees set** (\`lib/log-floor.mjs\`): this run's ${n(f.events)} events spelled again as small as each guarantee allows, in a database of their own (the kind a small integer, a source's author a number of a table of authors and its body an array of values; each event's sequence, idempotency key, sensitivity, time and 32-byte hash, and every lookup the service reads the log by) take ${n(f.bytes)} bytes, ${per(f.bytes)} per message, ${times(f.bytes)}× the text, where the log takes ${n(s.parts.log ?? 0)} (${times(s.parts.log ?? 0)}×). Of that floor the events' hashes (which tell an altered body from the one stored) are ${n(f.hashes)} bytes (${times(f.hashes)}×) and the skipped runs (the contract's content-dark record, one per source and compactor) ${n(f.skippedRuns)} (${times(f.skippedRuns)}×). With the turn index as it is (${times(index)}×), the log and its index alone are ${times(f.bytes + index)}× the text before any summary, extracted page or plan.`,
  ];
}

/**
 * Where the databases' bytes are after the run (`lib/d1-parts.mjs`), per message and against the
 * text said, the floor beside them.
 * @param {any} c
 */
function storageParts(c) {
  const s = c.storage;
  if (s === undefined) return [];
  const per = (/** @type {number} */ bytes) => n(bytes / c.conversation.messages, 0);
  const times = (/** @type {number} */ bytes) => n(bytes / s.textBytes, 1);
  return [
    "",
    `Where the databases' bytes are after the run (every page in use, read with SQLite's \`dbstat\` once the Worker stopped, less the pages the migrated databases held before it; an index counts with its table): ${n(s.total)} bytes, ${per(s.total)} per message, ${times(s.total)}× the ${n(s.textBytes)} bytes of text the log holds (UTF-8; the floor any store of this conversation keeps).`,
    "",
    "| part | bytes | per message | × the text |",
    "| --- | --- | --- | --- |",
    ...Object.entries(s.parts).map(([part, bytes]) => `| ${part} | ${n(bytes)} | ${per(bytes)} | ${times(bytes)} |`),
    ...floorLines(s, per, times),
    ...(s.tables === undefined
      ? []
      : [
          "",
          "By table (its indexes and full-text shadow tables with it), the ones that grew:",
          "",
          "| table | bytes | per message | × the text |",
          "| --- | --- | --- | --- |",
          ...Object.entries(s.tables).map(([table, bytes]) => `| \`${table}\` | ${n(bytes)} | ${per(bytes)} | ${times(bytes)} |`),
        ]),
  ];
}

/** @param {any} c the cost metrics, or undefined when the section did not run */
export function costSection(c) {
  if (c === undefined) return ["Not run."];
  const u = c.per1000Messages;
  const messages = SCENARIO.groups * SCENARIO.messagesPerDay * SCENARIO.days;
  const out = [
    `A generated group chat (seed 16, 8 people and the agent's replies, ${n(c.conversation.chars)} characters): ${n(c.conversation.messages)} messages and ${n(c.conversation.replies)} replies (a proposal and a delivery each), ` +
      `appended one event per request as a webhook delivers them (${n(c.conversation.events)} requests), policy trigger ${n(c.policy.triggerInputChars)} / retain ${n(c.policy.retainInputChars)}: ` +
      `${n(c.compactions)} compactions by the offline compactor, each followed by memory extraction, in ${n(c.seconds, 1)} s. ` +
      "Usage is the Worker's usage ledger (`src/storage/usage-meter.ts`, on only where `USAGE_METER = \"on\"`): every D1 statement's `meta.rows_read`/`rows_written` and D1's own `size_after` (Worker, queue consumer and the conversation's object, requests and alarms), R2 calls by billing class and bytes put, queue messages sent and delivered, and calls into the conversation's object; " +
      `read before the first append and after the usage stopped moving, less the ${n(c.usageRead.reads)} usage reads' own D1 use.`,
    "",
    "| per 1,000 messages | measured |",
    "| --- | --- |",
    `| D1 round trips / statements | ${n(u.d1RoundTrips)} / ${n(u.d1Statements)} |`,
    `| D1 rows read | ${n(u.d1RowsRead)} |`,
    `| D1 rows written | ${n(u.d1RowsWritten)} |`,
    `| D1 bytes stored (growth of the databases) | ${n(u.d1Bytes)} |`,
    ...(u.d1BytesShards === undefined ? [] : [`| of which the shards (event logs and what derives from them) | ${n(u.d1BytesShards)} |`, `| of which the control database (memory pages, placements, declarations) | ${n(u.d1BytesControl)} |`]),
    `| R2 Class A / Class B operations | ${n(u.r2ClassA, 1)} / ${n(u.r2ClassB, 1)} |`,
    `| R2 bytes stored (documents put) | ${n(u.r2Bytes)} |`,
    `| queue messages sent / delivered / retried | ${n(u.queueSent, 1)} / ${n(u.queueDelivered, 1)} / ${n(u.queueRetried, 1)} |`,
    `| Durable Object requests | ${n(u.objectRequests)} |`,
    `| Worker requests | ${n(c.workerRequestsPer1000Messages)} |`,
    "",
    "Where the D1 rows go, per 1,000 messages: the statements that read the most (SQL cut at 120 characters; the ledger keeps the 25 heaviest):",
    "",
    "| statement | calls | rows read | rows written |",
    "| --- | --- | --- | --- |",
    ...(c.statementsPer1000Messages ?? []).slice(0, 8).map((/** @type {any} */ s) => `| \`${s.sql.replaceAll("|", "\\|")}\` | ${n(s.calls)} | ${n(s.rowsRead)} | ${n(s.rowsWritten)} |`),
    "",
  ];
  for (const months of [1, 12]) {
    const bill = monthlyBill(c, messages, months);
    out.push(
      `**A bot in ${n(SCENARIO.groups)} groups at ${SCENARIO.messagesPerDay} messages a day** (${n(messages)} messages in a ${SCENARIO.days}-day month), month ${months}${months > 1 ? ` (the databases then hold ${months} months of history)` : ""}: **${usd(bill.total)}**, at Cloudflare's published Workers Paid prices as of ${PRICES.date}.`,
      "",
      "| item | used in the month | included | price beyond | cost |",
      "| --- | --- | --- | --- | --- |",
      `| Workers Paid plan | | | | ${usd(PRICES.workersPaidMonthly)} |`,
      ...bill.rows.map((r) => `| ${r.item} | ${n(r.used, r.unit === "GB" ? 2 : 0)} ${r.unit} | ${n(r.included)} | ${r.rate} | ${usd(r.cost)} |`),
      "",
    );
  }
  const gbPerMonth = (u.d1Bytes * (messages / 1000)) / GB;
  const shardGbPerMonth = ((u.d1BytesShards ?? u.d1Bytes) * (messages / 1000)) / GB;
  const controlGbPerMonth = ((u.d1BytesControl ?? 0) * (messages / 1000)) / GB;
  out.push(
    `The D1 database grows by ${n(u.d1Bytes / 1000, 1)} bytes per message (all it holds: the event log with its hashes, the run record of every source, boundaries, the turn index and memory, with their indexes): ${n(gbPerMonth, 2)} GB a month for this bot, so one D1 database (at most ${D1_DATABASE_LIMIT_GB} GB) holds ${n(D1_DATABASE_LIMIT_GB / gbPerMonth, 1)} months of its history, and a year needs ${n(Math.ceil((gbPerMonth * 12) / D1_DATABASE_LIMIT_GB))} databases' worth of room. Storage, not reads or writes, is what grows the bill.`,
    ...(u.d1BytesShards === undefined
      ? []
      : [
          "",
          `Of that growth, ${n(u.d1BytesShards / 1000, 1)} bytes per message land on the conversation's shard and ${n((u.d1BytesControl ?? 0) / 1000, 1)} on the control database (the agent's memory pages and their provenance, placements). So one shard fills in ${n(D1_DATABASE_LIMIT_GB / shardGbPerMonth, 1)} months of this bot's traffic (${n(Math.round((D1_DATABASE_LIMIT_GB * GB) / ((u.d1BytesShards ?? 1) / 1000) / 1e6), 1)} million messages), and the control database grows by ${n(controlGbPerMonth, 2)} GB a month: the bot needs about ${n(Math.ceil((shardGbPerMonth * 12) / D1_DATABASE_LIMIT_GB))} shards for a year of history (docs/OPERATIONS.md, "Scaling").`,
        ]),
    ...storageParts(c),
    "",
    "Not in the bill: Worker CPU time and Durable Object duration (wall-clock while an object is active), which the local runtime does not meter; the compactor's and extractor's model calls (none here: the offline compactor and extractor ran; with a model they are the provider's bill). " +
      `Prices from ${PRICES.sources.map((s) => `<${s}>`).join(", ")}.`,
  );
  return out;
}

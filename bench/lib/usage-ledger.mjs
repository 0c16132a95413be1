// The Worker's usage ledger (bench/worker/usage-meter.ts, USAGE_METER on), as a section reads it:
// a snapshot on any D1-metered request (`x-foldline-usage`), a snapshot once the usage stops moving,
// and what one interval used per 1,000 messages less the ledger reads' own D1 cost. §10
// (lib/cost-phase.mjs) and the peer section (lib/peer-phase.mjs) read it the same way.
import { sleep } from "./api.mjs";
import { round } from "./stats.mjs";

export class UsageLedger {
  /** @param {import("./api.mjs").Api} api @param {string} agent any declared agent: the read is `GET /v1/agents/<agent>` */
  constructor(api, agent) {
    this.api = api;
    this.agent = agent;
    /** Reads made since `reads` was last reset: their own D1 use is taken out of the figures. */
    this.reads = 0;
  }

  /** The usage so far (the header is written after the request's own work, so it includes this read's token check and agent read). */
  async read() {
    this.reads += 1;
    const { response } = await this.api.metered("usage", [200], "GET", `/v1/agents/${this.agent}`);
    const header = response.headers.get("x-foldline-usage");
    if (header === null) throw new Error("no x-foldline-usage header: are D1_METER and USAGE_METER on in this Worker?");
    return JSON.parse(header);
  }

  /**
   * Waits until the usage stops moving (extraction and any alarm behind the last compaction): the
   * same for three reads a second apart, at most 60 s. What the reads themselves move is left out
   * of the comparison: D1 reads, round trips, statements and object requests, and each statement's
   * calls and rows read (with those in, every read differed from the last and the wait always ran
   * its full 60 s).
   */
  async settled() {
    let previous = "";
    let same = 0;
    for (let i = 0; i < 60; i++) {
      const now = await this.read();
      const statements = (now.statements ?? []).map((/** @type {{ sql: string, rowsWritten: number }} */ s) => [s.sql, s.rowsWritten]);
      const key = JSON.stringify({ ...now, d1: { ...now.d1, rowsRead: 0, roundTrips: 0, statements: 0, bytesRead: 0 }, objectRequests: 0, statements });
      same = key === previous ? same + 1 : 0;
      if (same >= 2) return now;
      previous = key;
      await sleep(1_000);
    }
    return this.read();
  }

  /** One read on its own (nothing else may run): what each read adds, after `after`. @param {any} after */
  async oneRead(after) {
    const next = await this.read();
    return {
      roundTrips: next.d1.roundTrips - after.d1.roundTrips,
      statements: next.d1.statements - after.d1.statements,
      rowsRead: next.d1.rowsRead - after.d1.rowsRead,
      rowsWritten: next.d1.rowsWritten - after.d1.rowsWritten,
      objectRequests: next.objectRequests - after.objectRequests,
    };
  }
}

/** The shards' bytes in a usage snapshot (every D1 binding but the control database `DB`). @param {any} usage */
function shardBytes(usage) {
  return Object.entries(usage.d1BytesByDatabase ?? {}).reduce((sum, [name, bytes]) => (name === "DB" ? sum : sum + Number(bytes)), 0);
}

/**
 * What `after` used beyond `before`, per 1,000 messages, less `reads` usage reads of `one`'s D1 cost.
 * @param {any} before @param {any} after @param {number} messages @param {number} reads @param {any} one
 */
export function per1000(before, after, messages, reads, one) {
  const per = (/** @type {number} */ a, /** @type {number} */ b, /** @type {number} */ own = 0) => round(((a - b - reads * own) / messages) * 1000, 1);
  return {
    d1RoundTrips: per(after.d1.roundTrips, before.d1.roundTrips, one.roundTrips),
    d1Statements: per(after.d1.statements, before.d1.statements, one.statements),
    d1RowsRead: per(after.d1.rowsRead, before.d1.rowsRead, one.rowsRead),
    d1RowsWritten: per(after.d1.rowsWritten, before.d1.rowsWritten, one.rowsWritten),
    d1Bytes: per(after.d1Bytes, before.d1Bytes),
    // Control (`DB`) and the shards, apart: what fills a shard is what decides when to add one.
    d1BytesControl: per(after.d1BytesByDatabase?.DB ?? 0, before.d1BytesByDatabase?.DB ?? 0),
    d1BytesShards: per(shardBytes(after), shardBytes(before)),
    r2ClassA: per(after.r2ClassA, before.r2ClassA),
    r2ClassB: per(after.r2ClassB, before.r2ClassB),
    r2Bytes: per(after.r2BytesPut, before.r2BytesPut),
    queueSent: per(after.queueSent, before.queueSent),
    queueDelivered: per(after.queueDelivered, before.queueDelivered),
    queueRetried: per(after.queueRetried, before.queueRetried),
    objectRequests: per(after.objectRequests, before.objectRequests, one.objectRequests),
  };
}

import { describe, expect, it } from "vitest";
import type { ChainAudit, VerifiedLinkPage } from "../../src/api/chain";
import { anchoredChain, behindTheServicesBack, contextPath, pages, restart, say, setup, verify } from "../support/anchored-chain";
import { incidentRows } from "../support/incidents";
import { shardOf } from "../support/shards";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, json, logRows, sourceEvent } from "./helpers";

/**
 * The log is the system of record, and the head's summary was made from a slice of it. An event
 * deleted or rewritten behind the service's back (its immutability triggers dropped, as a person
 * with database access could) must make `/context` refuse the head the slice no longer matches,
 * exactly as `/verify` does, with one incident however often it is asked; a deleted event anywhere
 * (a tail turn, a run receipt, the newest event) must be named by `/verify`; and the sequence number
 * of a deleted newest event is never handed out again.
 */

const edit = (shard: D1Database, conversation: string, seq: number, from: string, to: string): D1PreparedStatement =>
  shard.prepare("UPDATE log SET body = replace(body, ?, ?) WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND seq = ?").bind(from, to, conversation, seq);
const remove = (shard: D1Database, conversation: string, seq: number): D1PreparedStatement =>
  shard.prepare("DELETE FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND seq = ?").bind(conversation, seq);

/** A source event the head covers: its summary and its packet's frozen slice were made from it. */
async function coveredSource(conversation: string, throughSeq: number): Promise<number> {
  const rows = await logRows(conversation);
  const covered = rows.filter((r) => r.kind === "source" && r.seq <= throughSeq).at(-1);
  if (covered === undefined) throw new Error("the head covers no source");
  return covered.seq;
}

async function expectRefusedOnce(token: string, conversation: string, agentId: string, calls: number): Promise<void> {
  for (let i = 0; i < calls; i++) {
    const res = await call("GET", contextPath(conversation, agentId), { token });
    expect(res.status).toBe(409);
    expect((await json<ErrorBody>(res)).error).toMatchObject({ code: "chain_invalid", reason: "divergent_hash", cause: "frozen_turns_mismatch", check: "frozen_turns_match_log" });
  }
  const refused = (await incidentRows(conversation)).filter((i) => i.kind === "resolver_failure" && i.agent_id === agentId);
  expect(refused).toEqual([expect.objectContaining({ code: "divergent_hash", count: calls, open: 1 })]);
}

function failedLinkChecks(report: ChainAudit): string[] {
  return (report.epochs[0]?.links ?? []).flatMap((l) => l.checks.filter((c) => !c.ok).map((c) => c.name));
}

describe("the resolver refuses what the verifier refuses: the head against the log", () => {
  it("refuses a head whose covered source was rewritten, with one incident, and serves again once the log is repaired", async () => {
    const { conversation, agentId, token, head } = await anchoredChain(1);
    const shard = await shardOf(conversation);
    const seq = await coveredSource(conversation, head.coveredThroughSeq);
    await behindTheServicesBack(shard, "log", [edit(shard, conversation, seq, "flights included", "flights excluded")]);
    expect(failedLinkChecks(await verify(token, conversation, agentId))).toContain("frozen_turns_match_log");
    await expectRefusedOnce(token, conversation, agentId, 3);
    await restart(conversation);
    expect((await call("GET", contextPath(conversation, agentId), { token })).status).toBe(409);
    // Put back, the head verifies again and the incident closes.
    await behindTheServicesBack(shard, "log", [edit(shard, conversation, seq, "flights excluded", "flights included")]);
    expect((await call("GET", contextPath(conversation, agentId), { token })).status).toBe(200);
    expect((await incidentRows(conversation)).filter((i) => i.kind === "resolver_failure" && i.open === 1)).toEqual([]);
  });

  it("refuses a head whose covered source was deleted", async () => {
    const { conversation, agentId, token, head } = await anchoredChain(1);
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "log", [remove(shard, conversation, await coveredSource(conversation, head.coveredThroughSeq))]);
    await expectRefusedOnce(token, conversation, agentId, 2);
    const report = await verify(token, conversation, agentId);
    expect(report.valid).toBe(false);
    expect(failedLinkChecks(report)).toContain("frozen_turns_match_log");
  });
});

describe("/verify sees the whole log, not only the slices boundaries were made from", () => {
  const expectLogFinding = async (token: string, conversation: string, agentId: string, found: { missing?: number[]; altered?: number[] }): Promise<void> => {
    const report = await verify(token, conversation, agentId);
    expect(report.valid).toBe(false);
    expect(report.log).toMatchObject({ ok: false, missing: found.missing ?? [], altered: found.altered ?? [] });
    // Every link still passes: the finding is the log's, and the paged audit says so too.
    expect(failedLinkChecks(report)).toEqual([]);
    const listed: VerifiedLinkPage[] = await pages(token, conversation, agentId, 50);
    expect(listed.every((p) => p.valid === false && p.log.ok === false)).toBe(true);
    await expectPagesShareTheLog(token, conversation, agentId, report);
  };

  /**
   * A page at a time, each page judges its own part of the log: the ranges follow one another from
   * the first event to the high-water mark, and what the pages find together is what the whole
   * audit finds, each on the page whose range holds it.
   */
  const expectPagesShareTheLog = async (token: string, conversation: string, agentId: string, report: ChainAudit): Promise<void> => {
    const listed: VerifiedLinkPage[] = await pages(token, conversation, agentId, 1);
    expect(listed.length).toBeGreaterThanOrEqual(1);
    let next = 1;
    for (const page of listed) {
      expect(page.log.range.fromSeq).toBe(next);
      next = page.log.range.throughSeq + 1;
      for (const seq of [...page.log.missing, ...page.log.altered]) expect(seq).toBeGreaterThanOrEqual(page.log.range.fromSeq);
      for (const seq of page.log.missing) expect(seq).toBeLessThanOrEqual(page.log.range.throughSeq);
      expect(page.valid).toBe(page.log.ok && page.anchor.ok && page.links.every((l) => l.valid));
    }
    expect(next).toBe(report.log.lastSeq + 1);
    expect(listed.flatMap((p) => p.log.missing)).toEqual(report.log.missing);
  };

  it("names a deleted tail turn", async () => {
    const { conversation, agentId, token, head } = await anchoredChain(1);
    await say(token, conversation, 100, 103);
    const tail = (await logRows(conversation)).filter((r) => r.kind === "source" && r.seq > head.coveredThroughSeq).at(-2);
    if (tail === undefined) throw new Error("no tail source");
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "log", [remove(shard, conversation, tail.seq)]);
    await expectLogFinding(token, conversation, agentId, { missing: [tail.seq] });
  });

  it("names a deleted run receipt", async () => {
    const { conversation, agentId, token } = await anchoredChain(1);
    await say(token, conversation, 100, 102);
    const run = (await logRows(conversation)).filter((r) => r.kind === "run" && !r.idempotency_key.endsWith(":completed")).at(-1);
    if (run === undefined) throw new Error("no run event");
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "log", [remove(shard, conversation, run.seq)]);
    await expectLogFinding(token, conversation, agentId, { missing: [run.seq] });
  });

  it("names an event whose body no longer has its stored hash", async () => {
    const { conversation, agentId, token, head } = await anchoredChain(1);
    await say(token, conversation, 100, 102);
    const tail = (await logRows(conversation)).filter((r) => r.kind === "source" && r.seq > head.coveredThroughSeq).at(-1);
    if (tail === undefined) throw new Error("no tail source");
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "log", [edit(shard, conversation, tail.seq, "flights included", "flights excluded")]);
    const report = await verify(token, conversation, agentId);
    expect(report.log).toMatchObject({ ok: false, missing: [], altered: [tail.seq] });
  });

  it("never hands out the sequence number of a deleted newest event again, and names the gap", async () => {
    const { conversation, agentId, token } = await setup();
    await say(token, conversation, 0, 3);
    const newest = (await logRows(conversation)).at(-1);
    if (newest === undefined) throw new Error("empty log");
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "log", [remove(shard, conversation, newest.seq)]);
    await restart(conversation);
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent("after-gap", "after-gap", "Anyone there?") })).status).toBe(201);
    const placed = (await logRows(conversation)).find((r) => r.idempotency_key === "after-gap");
    expect(placed?.seq).toBe(newest.seq + 1);
    expect((await verify(token, conversation, agentId)).log).toMatchObject({ ok: false, missing: [newest.seq], altered: [] });
  });

  it("reports an intact log as intact", async () => {
    const { conversation, agentId, token } = await anchoredChain(1);
    const report = await verify(token, conversation, agentId);
    const rows = await logRows(conversation);
    expect(report.log).toEqual({ ok: true, lastSeq: rows.length, missing: [], altered: [] });
    expect((await pages(token, conversation, agentId, 50)).every((p) => p.valid && p.log.ok)).toBe(true);
    await expectPagesShareTheLog(token, conversation, agentId, report);
  });

  it("names a deleted event on the page whose part of the log held it, the middle of the chain included", async () => {
    const { conversation, agentId, token, chain } = await anchoredChain(3);
    const [, second] = chain;
    if (second === undefined) throw new Error("no second boundary");
    const covered = (await logRows(conversation)).filter((r) => r.kind === "run" && r.seq > (chain[0]?.coveredThroughSeq ?? 0) && r.seq <= second.coveredThroughSeq).at(0);
    if (covered === undefined) throw new Error("no run event under the second link");
    const shard = await shardOf(conversation);
    await behindTheServicesBack(shard, "log", [remove(shard, conversation, covered.seq)]);
    const report = await verify(token, conversation, agentId);
    expect(report.log).toMatchObject({ ok: false, missing: [covered.seq] });
    await expectPagesShareTheLog(token, conversation, agentId, report);
    const holding = (await pages(token, conversation, agentId, 1)).filter((p) => !p.log.ok);
    expect(holding.map((p) => p.links.map((l) => l.position))).toEqual([[2]]);
  });
});

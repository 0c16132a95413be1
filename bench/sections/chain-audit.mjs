// The report's chain audit: `GET …/verify` on the long replay's chain, then the same chain one link
// per page (`GET …/verify/links`), whose cost should not grow with the link's position.
import { performance } from "node:perf_hooks";
import { short } from "../lib/scenario.mjs";
import { percentile, round } from "../lib/stats.mjs";

/**
 * @param {{ api: import("../lib/api.mjs").Api, size: Record<string, number>, log: (line: string) => void } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function verifyLongChain({ api, size, log, agents }) {
  const t0 = performance.now();
  const audit = await api.verify(agents.big.conversation, agents.big.id);
  const links = audit.epochs.flatMap((/** @type {any} */ e) => e.links);
  const whole = { valid: audit.valid, links: links.length, linksValid: links.filter((/** @type {any} */ l) => l.valid).length, ms: round(performance.now() - t0, 0) };
  log(`[verify] ${short(size.big)} chain: ${whole.linksValid}/${links.length} links valid in ${whole.ms} ms`);
  return { whole, audit };
}

/**
 * The same chain a link per page: each page reads its own rows, packet, receipt and slice of the log.
 * @param {{ api: import("../lib/api.mjs").Api, log: (line: string) => void } & import("../lib/scenario.mjs").Scenarios} ctx
 * @param {any} audit the whole audit's answer, to compare the pages with
 */
export async function verifyLinkPages({ api, log, agents }, audit) {
  /** @type {number[]} */
  const pageMs = [];
  /** @type {any[]} */
  const paged = [];
  for (let after = 0; after !== null; ) {
    const started = performance.now();
    const page = await api.verifyLinks(agents.big.conversation, agents.big.id, after, 1);
    pageMs.push(performance.now() - started);
    paged.push(...page.links);
    after = page.nextAfter;
  }
  const current = audit.epochs.find((/** @type {any} */ e) => e.current)?.links ?? [];
  const half = Math.floor(pageMs.length / 2);
  const pages = {
    pages: pageMs.length,
    agreesWithWholeAudit: JSON.stringify(paged) === JSON.stringify(current),
    p50Ms: round(percentile(pageMs, 50), 1),
    maxMs: round(Math.max(...pageMs), 1),
    firstHalfP50Ms: round(percentile(pageMs.slice(0, half), 50), 1),
    secondHalfP50Ms: round(percentile(pageMs.slice(half), 50), 1),
    totalMs: round(pageMs.reduce((a, b) => a + b, 0), 0),
  };
  log(`[verify] one link per page: ${pages.pages} pages, p50 ${pages.p50Ms} ms (first half ${pages.firstHalfP50Ms}, second half ${pages.secondHalfP50Ms}), ${pages.agreesWithWholeAudit ? "the same links as the whole audit" : "DIFFERENT links from the whole audit"}`);
  return pages;
}

// A thin client of Foldline's public HTTP API (the same routes a bot uses), with timing.
import { performance } from "node:perf_hooks";

export class ApiError extends Error {
  /** @param {string} what @param {number} status @param {string} body */
  constructor(what, status, body) {
    super(`${what}: HTTP ${status} ${body.slice(0, 600)}`);
    this.status = status;
  }
}

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Api {
  /**
   * @param {string} baseUrl @param {string} token
   * @param {{ timeoutMs?: number }} [options] `timeoutMs`: a request not answered in full by then is
   * abandoned and rejects (a section whose appends may take minutes sets it; by default the only
   * limit is fetch's own wait for response headers, 300 s)
   */
  constructor(baseUrl, token, { timeoutMs } = {}) {
    this.baseUrl = baseUrl;
    this.token = token;
    this.timeoutMs = timeoutMs;
  }

  /**
   * One request, timed from send to the last byte of the body.
   * @param {string} method @param {string} path @param {unknown} [body] @param {Record<string, string>} [extraHeaders]
   * @returns {Promise<{ status: number, ms: number, bytes: number, text: string, headers: Headers, json: () => any }>}
   */
  async request(method, path, body, extraHeaders = {}) {
    /** @type {Record<string, string>} */
    const headers = { authorization: `Bearer ${this.token}`, ...extraHeaders };
    const init = /** @type {RequestInit} */ ({ method, headers });
    if (this.timeoutMs !== undefined) init.signal = AbortSignal.timeout(this.timeoutMs);
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const started = performance.now();
    const response = await fetch(`${this.baseUrl}${path}`, init);
    const buffer = Buffer.from(await response.arrayBuffer());
    const ms = performance.now() - started;
    const text = buffer.toString("utf8");
    return { status: response.status, ms, bytes: buffer.length, text, headers: response.headers, json: () => JSON.parse(text) };
  }

  /** A request that must succeed with one of `ok` statuses. */
  async expect(/** @type {string} */ what, /** @type {number[]} */ ok, /** @type {string} */ method, /** @type {string} */ path, /** @type {unknown} */ body) {
    const response = await this.request(method, path, body);
    if (!ok.includes(response.status)) throw new ApiError(what, response.status, response.text);
    return response;
  }

  /** @param {string} conversation */
  static conversationPath(conversation) {
    return `/v1/conversations/${encodeURIComponent(conversation)}`;
  }

  /**
   * Registers an agent and its reciprocal compactor (README "Compaction in five calls"); `context`:
   * the agent's own caps, where not the defaults.
   * @param {{ agentId: string, sources: string[], model?: string, policy?: Record<string, number>, context?: Record<string, number> }} options
   */
  async registerAgent({ agentId, sources, model = "bench-model", policy = {}, context }) {
    const shared = {
      enabled: true,
      provider: { profile: "default", model },
      sources,
      admitSensitive: true, // boundaries are sensitive: without this the agent is never served one
      historyAgents: [agentId],
      documents: [],
      documentBudgetChars: 4_000,
    };
    const registration = {
      agent: { id: agentId, compactorId: `${agentId}.compactor`, ...shared, ...(context === undefined ? {} : { context }) },
      compactor: { id: `${agentId}.compactor`, targetId: agentId, ...shared, policy, outputMode: "projection" },
    };
    return (await this.expect(`register ${agentId}`, [200, 201], "PUT", `/v1/agents/${agentId}`, registration)).json();
  }

  /** @param {string} conversation @param {object} event */
  appendOne(conversation, event) {
    return this.request("POST", `${Api.conversationPath(conversation)}/events`, event);
  }

  /** @param {string} conversation @param {object[]} events */
  appendBatch(conversation, events) {
    return this.expect(`batch append to ${conversation}`, [200, 201], "POST", `${Api.conversationPath(conversation)}/events/batch`, { events });
  }

  /** @param {string} conversation @param {string} agentId */
  context(conversation, agentId) {
    return this.expect(`context of ${conversation}`, [200], "GET", `${Api.conversationPath(conversation)}/context?agent=${encodeURIComponent(agentId)}`);
  }

  /**
   * A request with the Worker's D1 meter asked for (`D1_METER = "on"` in the bench's worker): what
   * the Worker and the conversation's object did in D1 to answer it.
   * @param {string} what @param {number[]} ok @param {string} method @param {string} path @param {unknown} [body]
   */
  async metered(what, ok, method, path, body) {
    const response = await this.request(method, path, body, { "x-foldline-d1-meter": "on" });
    if (!ok.includes(response.status)) throw new ApiError(`metered ${what}`, response.status, response.text);
    const header = response.headers.get("x-foldline-d1-reads");
    if (header === null) throw new ApiError(`metered ${what}: no x-foldline-d1-reads header (is D1_METER on?)`, response.status, "");
    const d1 = Object.fromEntries(header.split("; ").map((part) => part.split("=")).map(([key, value]) => [key, Number(value)]));
    return {
      response,
      d1: {
        roundTrips: d1["round-trips"] ?? NaN,
        statements: d1["statements"] ?? NaN,
        rowsRead: d1["rows-read"] ?? NaN,
        rowsWritten: d1["rows-written"] ?? NaN,
        bytesRead: d1["bytes-read"] ?? NaN,
      },
    };
  }

  /** A metered context call (`metered`). @param {string} conversation @param {string} agentId */
  async contextReads(conversation, agentId) {
    const path = `${Api.conversationPath(conversation)}/context?agent=${encodeURIComponent(agentId)}`;
    const { response, d1 } = await this.metered(`context of ${conversation}`, [200], "GET", path);
    return { bytes: response.bytes, ...d1 };
  }

  /** The whole listing, its pages followed (`nextAfter`) and joined. @param {string} conversation @param {string} agentId */
  async chain(conversation, agentId) {
    /** @type {any} */
    let listing;
    const boundaries = [];
    for (let after = null; listing === undefined || after !== null; ) {
      const query = `agent=${encodeURIComponent(agentId)}&limit=200${after === null ? "" : `&after=${encodeURIComponent(after)}`}`;
      listing = await (await this.expect(`chain of ${conversation}`, [200], "GET", `${Api.conversationPath(conversation)}/chain?${query}`)).json();
      boundaries.push(...listing.boundaries);
      after = listing.nextAfter;
    }
    return { ...listing, boundaries, nextAfter: null };
  }

  /** @param {string} conversation @param {string} agentId */
  async verify(conversation, agentId) {
    return (await this.expect(`verify of ${conversation}`, [200], "GET", `${Api.conversationPath(conversation)}/verify?agent=${encodeURIComponent(agentId)}`)).json();
  }

  /** @param {string} conversation @param {string} agentId @param {number} after @param {number} limit */
  async verifyLinks(conversation, agentId, after, limit) {
    const query = `agent=${encodeURIComponent(agentId)}&after=${after}&limit=${limit}`;
    return (await this.expect(`verify/links of ${conversation}`, [200], "GET", `${Api.conversationPath(conversation)}/verify/links?${query}`)).json();
  }

  /** @param {string} conversation @param {number} after @param {number} limit */
  async events(conversation, after, limit = 500) {
    return (await this.expect(`events of ${conversation}`, [200], "GET", `${Api.conversationPath(conversation)}/events?after=${after}&limit=${limit}`)).json();
  }
}

/**
 * Follows one conversation's log incrementally and keeps what the metrics need from the events
 * Foldline itself writes there: compactor run events (planned / completed / failed / skipped).
 */
export class LogFollower {
  /** @param {Api} api @param {string} conversation */
  constructor(api, conversation) {
    this.api = api;
    this.conversation = conversation;
    this.after = 0;
    /** @typedef {{ seq: number, recordedAt: number, detail: Record<string, unknown> }} RunStep */
    /** @type {Map<string, { planned?: RunStep, completed?: RunStep, failed: unknown[] }>} */
    this.runs = new Map();
    /** Preflight records: one per admitted source (skipped below the trigger or while a run is in flight). */
    /** @type {{ seq: number, sourceSeq: number, activeChars: number, reason: string }[]} */
    this.preflights = [];
    /** @type {Record<string, number>} */
    this.kinds = {};
    this.lastSeq = 0;
  }

  /** Reads every event appended since the last call. */
  async poll() {
    for (;;) {
      const page = await this.api.events(this.conversation, this.after, 500);
      for (const event of page.events) {
        this.kinds[event.kind] = (this.kinds[event.kind] ?? 0) + 1;
        this.lastSeq = event.seq;
        if (event.kind !== "run") continue;
        const { runId, status, detail } = event.body;
        if (status === "skipped") {
          this.preflights.push({ seq: event.seq, sourceSeq: detail.sourceSeq, activeChars: detail.activeChars, reason: detail.reason });
          continue;
        }
        const run = this.runs.get(runId) ?? { failed: [] };
        if (status === "planned") run.planned = { seq: event.seq, recordedAt: Date.parse(event.recordedAt), detail };
        else if (status === "completed") run.completed = { seq: event.seq, recordedAt: Date.parse(event.recordedAt), detail };
        else if (status === "failed") run.failed.push({ seq: event.seq, recordedAt: Date.parse(event.recordedAt), detail, error: event.body.error });
        this.runs.set(runId, run);
      }
      if (page.nextAfter === null || page.nextAfter === undefined) {
        if (page.events.length > 0) this.after = page.events.at(-1).seq;
        return;
      }
      this.after = page.nextAfter;
    }
  }

  /** Planned runs without a completed run event (a plan whose attempt failed is still open). */
  openRuns() {
    return [...this.runs.entries()].filter(([, r]) => r.planned !== undefined && r.completed === undefined).map(([id]) => id);
  }

  plannedRuns() {
    return [...this.runs.entries()].filter(([, r]) => r.planned !== undefined).map(([runId, r]) => ({ runId, ...r }));
  }
}

/**
 * Waits until compaction has caught up: no planned run left open and the served context (plus
 * anything the agent's own budget omitted) below the trigger, so nothing more will be planned.
 * The context call is serialized with the object's writes, so it also waits out a settlement
 * (and the plan it may chain) that is in progress when we look.
 * @param {{ api: Api, follower: LogFollower, agentId: string, trigger: number, timeoutMs?: number, onWait?: (state: string) => void }} options
 */
export async function waitForCatchUp({ api, follower, agentId, trigger, timeoutMs = 240_000, onWait }) {
  const deadline = Date.now() + timeoutMs;
  let lastReport = Date.now();
  for (;;) {
    // A chain so far behind that its object holds only the oldest part of its history answers
    // 409 compaction_behind until it caught up: not caught up yet, as a large active size is.
    const response = await api.expect(`context of ${follower.conversation}`, [200, 409], "GET", `${Api.conversationPath(follower.conversation)}/context?agent=${encodeURIComponent(agentId)}`);
    const context = response.json();
    if (response.status === 409 && context.error?.code !== "compaction_behind") throw new ApiError(`context of ${follower.conversation}`, response.status, response.text);
    await follower.poll();
    const behind = response.status === 409 ? context.error.throughSeq : undefined;
    const active = behind === undefined ? context.manifest.totals.chars + context.manifest.omitted.chars : Number.POSITIVE_INFINITY;
    const open = follower.openRuns();
    if (open.length === 0 && active < trigger) return context;
    if (Date.now() > deadline) {
      throw new Error(`compaction of ${follower.conversation} did not catch up within ${timeoutMs / 1000} s: active ${active} chars, open runs ${open.join(", ")}`);
    }
    if (onWait !== undefined && Date.now() - lastReport > 5_000) {
      lastReport = Date.now();
      const where = behind === undefined ? `active ${active.toLocaleString("en-US")} chars` : `behind its log, holding through seq ${behind.toLocaleString("en-US")}`;
      onWait(`${where}, ${open.length} run(s) in flight, ${follower.plannedRuns().length} planned so far`);
    }
    await sleep(200);
  }
}

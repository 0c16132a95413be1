// The peer section's report (§15, measured by lib/peer-phase.mjs): both systems' figures in one
// table per question, what each could prove, and where the peer came out ahead, from the numbers.

const n = (/** @type {number | null | undefined} */ v, digits = 0) =>
  v === null || v === undefined || !Number.isFinite(v) ? "–" : v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (/** @type {{ found: number, share: number | null } | undefined} */ s) => (s === undefined || s.share === null ? "–" : `${(s.share * 100).toFixed(1)}% (${s.found})`);
const said = (/** @type {boolean | null | undefined} */ v) => (v === null || v === undefined ? "–" : v ? "yes" : "no");

/** @param {string[]} header @param {(string | number)[][]} rows */
const table = (header, rows) => [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

/** @param {any} p the section's metrics */
function storageRows(p) {
  /** @type {(string | number)[][]} */
  const rows = [];
  for (const [name, replay] of [[`LoCoMo (${p.locomo.conversations.length} conversations)`, p.locomo], ["§10's group chat", p.chat]]) {
    const f = replay.foldline;
    const q = replay.peer;
    const label = `${name}: ${n(replay.messages)} messages, ${n(replay.chars / replay.messages, 0)} chars each`;
    rows.push([label, "Foldline", n(f.bytesPer1000), `${n(f.bytesPerChar, 2)}×`, n(f.rowsWrittenPer1000, 0), n(f.append.p50, 1)]);
    rows.push([label, "peer", n(q.bytesPer1000), `${n(q.bytesPerChar, 2)}×`, n(q.rowsWrittenPer1000, 0), n(q.append.p50, 1)]);
  }
  return rows;
}

/** @param {any} p */
function proofRows(p) {
  const { verify, edit, forgery } = p.proofs;
  const f = forgery.foldline ?? {};
  return [
    [
      "(a) verify a summary's coverage",
      `\`GET …/verify\`: HTTP ${verify.foldline.status}, valid ${said(verify.foldline.valid)}, ${verify.foldline.links} links each re-checked (${verify.foldline.checksPerLink.join(", ")}); log missing ${n(verify.foldline.logMissing)}, altered ${n(verify.foldline.logAltered)}`,
      `no verify call; ${verify.peer.overlays} stored overlays, each \`{ ${verify.peer.overlayFields.join(", ")} }\`: a summary and two message ids, nothing to recompute it from`,
    ],
    edit.turn === null
      ? ["(b) edit of summarized history", `not run: ${edit.reason}`, "–"]
      : [
          `(b) edit of summarized history (turn ${edit.turn.diaId}, under both summaries)`,
          `context HTTP ${edit.foldline.contextStatus}: the edit served ${said(edit.foldline.served)} (as ${edit.foldline.servedAs.join(", ") || "–"}; amendment items: ${edit.foldline.amendmentItems.join(", ") || "none"}), boundary unchanged ${said(edit.foldline.boundaryUnchanged)}`,
          `\`updateMessage\` stored ${said(edit.peer.stored)}; history serves the edit ${said(edit.peer.served)} (the message is in history: ${said(edit.peer.messageInHistory)}, its overlay's summary stands); \`search\` finds it ${said(edit.peer.foundBySearch)}`,
        ],
    [
      "(c) forged / forked summary",
      f.rewritten === undefined
        ? "–"
        : `head summary rewritten in D1, hash recomputed (the immutability trigger refused it first: "${f.refusedWithTriggers ?? "no"}"); restarted Worker: context HTTP ${f.contextStatus} \`${f.error?.code ?? "–"}\` (${f.error?.reason ?? "–"}, ${f.error?.cause ?? "–"}), forged text served ${said(f.forgedServed)}, verify valid ${said(f.verifyValid)}; a fork beside the head: "${f.forkRefused ?? "stored"}"`,
      forgery.peer.accepted === undefined
        ? "–"
        : `\`addCompaction\` over its newest overlay's span: accepted ${said(forgery.peer.accepted)} (${n(forgery.peer.rowsWritten)} row written; overlays ${forgery.peer.overlaysStored?.before} → ${forgery.peer.overlaysStored?.after}); history serves the forged text ${said(forgery.peer.forgedServed)}, the original summary ${said(forgery.peer.originalServed)}`,
    ],
  ];
}

/** The metrics where the peer's figure is lower (better), each with both figures. @param {any} p */
function peerWins(p) {
  /** @type {[string, number, number, string][]} */
  const compared = [
    ["storage per 1,000 LoCoMo messages", p.locomo.peer.bytesPer1000, p.locomo.foldline.bytesPer1000, "bytes"],
    ["storage per 1,000 messages of §10's chat", p.chat.peer.bytesPer1000, p.chat.foldline.bytesPer1000, "bytes"],
    ["rows written per 1,000 LoCoMo messages", p.locomo.peer.rowsWrittenPer1000, p.locomo.foldline.rowsWrittenPer1000, "rows"],
    ["rows written per 1,000 messages of §10's chat", p.chat.peer.rowsWrittenPer1000, p.chat.foldline.rowsWrittenPer1000, "rows"],
    ["append p50 (LoCoMo)", p.locomo.peer.append.p50, p.locomo.foldline.append.p50, "ms"],
    ["append p50 (§10's chat)", p.chat.peer.append.p50, p.chat.foldline.append.p50, "ms"],
    ["context read p50", p.context.peer.p50, p.context.foldline.p50, "ms"],
    ["search p50 per question", p.recall.peer.searchMs.p50, p.recall.foldline.searchMs.p50, "ms"],
  ];
  const line = (/** @type {[string, number, number, string]} */ [what, peer, foldline, unit]) => `${what} (${n(peer, unit === "ms" ? 1 : 0)} against ${n(foldline, unit === "ms" ? 1 : 0)} ${unit}, ${n(foldline / peer, 1)}×)`;
  const wins = compared.filter(([, peer, foldline]) => peer < foldline);
  const losses = compared.filter(([, peer, foldline]) => peer >= foldline);
  return [
    `**Where the peer wins.** Lower for the peer in this run: ${wins.length === 0 ? "nothing measured here" : wins.map(line).join("; ")}.` +
      (losses.length === 0 ? "" : ` Lower for Foldline: ${losses.map((l) => line([l[0], l[2], l[1], l[3]])).join("; ")} (the ratio is the peer's figure over Foldline's).`) +
      ` On recall within the same ${n(p.recall.budgetChars)}-character budget the peer's own search found the evidence for ${pct(p.recall.peer.search)} of questions against Foldline's search ${pct(p.recall.foldline.search)}; its per-word variant ${pct(p.recall.peer.searchByWord)}.`,
  ];
}

/** @param {any} p the section's metrics */
export function peerSection(p) {
  const r = p.recall;
  return [
    `One Worker of its own ran both, in one run: Foldline (agent \`${p.agent}\`, trigger ${n(p.policy.foldline.triggerInputChars)} / retain ${n(p.policy.foldline.retainInputChars)} characters, memory budget ${n(r.budgetChars)}; its compactor the loopback fake, memory extraction offline) and the peer, the Cloudflare Agents SDK's Sessions (\`agents/sessions\`) on a Durable Object of its own per conversation (\`bench/worker/peer-sessions.ts\`), with the SDK's compaction (\`createCompactFunction\`, \`compactAfter(${n(p.policy.peer.compactAfterTokens)})\`, \`keepRecentTokens ${n(p.policy.peer.keepRecentTokens)}\` in the SDK's token estimate, about 4 characters a token here, so the same trigger and retain), its summarizer the same fake, and its full-text index built before the first message so every append maintains it. ` +
      `Replayed through both, message by message: LoCoMo's ${p.locomo.conversations.length} conversations (${p.locomo.conversations.join(", ")}; conv-26 and conv-30 held out), each turn sent to Foldline's Telegram webhook as §12 sends it and appended to the peer (the first speaker a user message, the second an assistant message, the text as \`<speaker>: <text>\`), and §10's group chat (seed ${p.chat.seed}, ${n(p.chat.turns)} messages; ${n(p.chat.events)} events through \`POST …/events\` as §10 sends them; on the peer a person's message is a user message \`<name>: <text>\`, the agent's reply an assistant message). Model calls: Foldline's compactor ${n(p.modelCalls?.foldline)}, the peer's summarizer ${n(p.modelCalls?.peer)}.`,
    "",
    "### Per 1,000 messages",
    "",
    table(["replay", "system", "storage bytes", "bytes ÷ chars said", "rows written", "append p50 (ms)"], storageRows(p)),
    "",
    "A message is a person's message or the agent's reply, one message on both systems (Foldline stores a reply as a proposal and its delivery); characters said are the messages' own text, without the `<speaker>: ` the peer's text carries. ",
    `Foldline's storage is as §10 reads it, from the usage ledger between the settled state before and after each replay: D1's growth (\`size_after\`; LoCoMo ${n(p.locomo.foldline.d1BytesPer1000)}, chat ${n(p.chat.foldline.d1BytesPer1000)} per 1,000), R2 bytes put (${n(p.locomo.foldline.r2BytesPer1000)}, ${n(p.chat.foldline.r2BytesPer1000)}) and its conversation objects' own SQLite (\`databaseSize\` over a fresh object's ${n(p.emptyObjectBytes.foldline)} bytes: ${n(p.locomo.foldline.objectBytesPer1000)}, ${n(p.chat.foldline.objectBytesPer1000)}); rows written are the ledger's D1 rows (appends, compactions, extraction), less its own reads'. ` +
      `The peer's storage is its objects' \`ctx.storage.sql.databaseSize\` after the replay less an empty object's (${n(p.emptyObjectBytes.peer)} bytes: the SDK's tables and the search index, no message); its rows written are the sum of \`rowsWritten\` over every cursor \`ctx.storage.sql.exec\` returned during the appends, compactions included (the object keeps each cursor and reads it when the call is done). Not counted for the peer: the SDK's schema-version key it writes through the storage API once per object (not through \`sql.exec\`). ` +
      "Appends are timed at the client through the same Worker: a person's message (Foldline: the webhook or `POST …/events`; the peer: `appendMessage`, which runs the SDK's compaction inline on the append that crosses the trigger, while Foldline's runs on its queue).",
    "",
    "### Context reads",
    "",
    table(
      ["system", "what is read", "p50 (ms)", "p90 (ms)", "mean chars", "max chars"],
      [
        ["Foldline", "`GET …/context?agent=` (boundary, amendments, exact tail)", n(p.context.foldline.p50, 1), n(p.context.foldline.p90, 1), n(p.context.foldline.meanChars), n(p.context.foldline.maxChars)],
        ["peer", "`getHistory()` (the path with compaction overlays)", n(p.context.peer.p50, 1), n(p.context.peer.p90, 1), n(p.context.peer.meanChars), n(p.context.peer.maxChars)],
      ],
    ),
    "",
    `${p.context.samplesPerConversation} reads of each, alternating, per conversation (${p.context.conversations} conversations: LoCoMo's and the chat), after both replays.`,
    "",
    `### Evidence recall within ${n(r.budgetChars)} characters (LoCoMo, ${n(r.questions)} questions)`,
    "",
    table(
      ["system", "what the agent is given", "questions with evidence found"],
      [
        ["Foldline", "served: `GET …/context?agent=&query=<question>` (boundary, memory envelope ≤ budget, exact tail), scored as §12", pct(r.foldline.served)],
        ["Foldline", "search: `GET …/memory/search`, results in order within the budget", pct(r.foldline.search)],
        ["peer", "history alone: `getHistory()` with overlays", pct(r.peer.history)],
        ["peer", "search: `session.search(question)` (one FTS5 phrase), results in order within the budget", pct(r.peer.search)],
        ["peer", "served: history + that search", pct(r.peer.served)],
        ["peer", "search by word: `session.search(word)` per content word, ranked by words matched (the bench's code over the SDK's search), within the budget", pct(r.peer.searchByWord)],
        ["peer", "served by word: history + search by word", pct(r.peer.servedByWord)],
      ],
    ),
    "",
    `A question counts when one of its evidence turns is given: by message id (the peer's messages carry the Telegram message ids) or by its exact text in a summary. The SDK quotes the whole query as one phrase, so \`search(question)\` returned anything for ${n(r.peer.questionsWithAPhraseHit)} of ${n(r.questions)} questions. Foldline's served context averaged ${n(r.foldline.meanServedChars)} characters; the peer's history ${n(r.peer.meanHistoryChars)}. Time per question (two conversations asked at once): Foldline context p50 ${n(r.foldline.contextMs.p50, 1)} ms, search p50 ${n(r.foldline.searchMs.p50, 1)} ms; the peer's search p50 ${n(r.peer.searchMs.p50, 1)} ms.`,
    "",
    "### What each can prove (observed)",
    "",
    table(["check", "Foldline", "peer"], proofRows(p)),
    "",
    ...peerWins(p),
  ];
}

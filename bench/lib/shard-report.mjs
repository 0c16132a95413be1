// The report's shard section (§11): measured and simulated rows side by side in one table, every
// bound and verdict computed from the run's numbers (lib/shard-phase.mjs); the simulated rows say so.

const n = (/** @type {number | null | undefined} */ v, digits = 0) =>
  v === null || v === undefined || !Number.isFinite(v) ? "–" : v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (/** @type {number} */ ratio) => `${ratio >= 1 ? "+" : "−"}${Math.abs((ratio - 1) * 100).toFixed(0)}%`;

/** @param {string[]} header @param {(string | number)[][]} rows */
const table = (header, rows) => [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

/** @param {any} row */
const mode = (row) => (row.simulated ? `**simulated**, ${row.statementMs} ms/statement` : "local D1 (measured)");

/** A simulated row that reached 90% of its writers' bound ran into the writers; any other row into the Worker's own thread. */
const WRITER_BOUND_SHARE = 0.9;
/** @param {any} row */
const writerBound = (row) => row.simulated && row.writerBoundAppendsPerSecond !== null && row.appendsPerSecond >= WRITER_BOUND_SHARE * row.writerBoundAppendsPerSecond;

/** @param {any} s the shard metrics, or undefined when the section did not run @param {any} env the run's environment */
export function shardSection(s, env) {
  if (s === undefined) return ["Not run."];
  const rows = /** @type {any[]} */ (s.rows);
  const first = rows[0];
  const d1 = first?.d1PerAppend;
  const planned = rows.reduce((sum, r) => sum + r.runs.planned, 0);
  const skipped = rows.reduce((sum, r) => sum + r.runs.skipped, 0);
  const check = s.isolateCheck;
  const out = [];

  out.push(
    `For 1, 2 and 4 shards, each row on a Worker of its own: a copy of the run's snapshot whose wrangler.toml binds exactly that many shard databases (\`DB_SHARD_<n>\`, distinct database ids), both migration sets applied to a fresh state directory, a token, and one agent whose sources (\`api:bench:shards:*\`) cover the load's ${n(s.conversations)} conversations with a trigger of ${n(s.policy.triggerInputChars)} characters, which the load never nears: **no compaction runs** (${planned} runs planned over all rows; every source's preflight recorded its skipped run, ${n(skipped)} in all). ` +
      `Each conversation first gets ${s.warmAppendsPerConversation} appends that are not timed (the first places it on a shard and wakes its object, the second finds the object warm for the agent's chains); then **${n(s.appendsPerRow)} single-source appends** (\`POST …/events\`) are timed, from ${n(s.conversations)} clients at once, one per conversation. ` +
      `A source append costs ${n(d1?.roundTrips, 2)} D1 round trip and ${n(d1?.statements, 2)} statements (one batch; the D1 meter on ${d1?.n ?? 0} appends after the load), all on ${d1?.databases?.join(" and ") ?? "–"}.`,
    "",
    `**Which rows are simulation.** Local D1 under \`wrangler dev\` is a SQLite file per database served inside the Worker's own workerd process, so shards there share the Worker's thread and the machine's ${env.machine.cores} cores. ` +
      "The rows marked **simulated** run with `D1_SIMULATED_STATEMENT_MS` set (`src/storage/d1-simulation.ts`): every D1 binding, control and shards, becomes a single writer, as Cloudflare describes a D1 database (one query at a time; about 1,000 queries a second at 1 ms each): each call to D1 (`run`/`all`/`first`/`raw` or one `batch`) occupies its database's writer for its statements × the service time, calls queue first come first served per database, and then the real local call runs. " +
      "Their throughput is what the Worker does against such writers, not a measurement of D1; the local rows are measured as they are. The writers' bound is shards × 1,000 / (statements per append × service time), every shard kept busy.",
    "",
  );
  if (check !== undefined) {
    out.push(
      `**One writer per database, shared by the Worker and every object.** The writers are module state, so they are one per database only if the Worker and all conversation objects run in one isolate. Checked on a 1-shard Worker simulated at ${check.statementMs} ms/statement with the usage ledger (module state too) on: ${check.conversations} appends to ${check.conversations} conversations (${check.conversations} objects) at once took **${n(check.burstMs)} ms**; ` +
        `${check.oneWriter ? "one writer needs at least" : "**less than** one writer needs:"} their ${check.statementsInWorkerLedger} statements × ${check.statementMs} ms = ${n(check.oneWriterMs)} ms (separate writers per object would take about ${n((check.oneWriterMs / check.conversations))} ms), ` +
        `and the ledger the Worker's own request read ${check.sharedModuleState ? "held the objects' statements" : "**did not hold** the objects' statements"}. ` +
        (check.oneWriter && check.sharedModuleState
          ? "In local workerd the Worker, its queue consumer and every object share one isolate and one module instance, so each simulated database has one writer. (On Cloudflare objects run in isolates of their own; the simulation is for local runs only.)"
          : "**The simulated rows below do not have one writer per database**: each isolate simulated its own."),
      "",
    );
  }

  out.push(
    table(
      ["shards", "D1", "appends/s", "p50 / p99 ms", "workerd CPU per append", "busiest workerd thread", "CPU bound: all cores / one thread", "writers' bound", "conversations per shard", "other work on the machine"],
      rows.map((r) => [
        String(r.shards),
        mode(r),
        `**${n(r.appendsPerSecond, 1)}**`,
        `${n(r.latency.p50)} / ${n(r.latency.p99)}`,
        `${n(r.cpu.workerdMsPerAppend, 2)} ms (${n(r.cpu.workerdCoresBusy, 2)} cores busy)`,
        r.cpu.busiestThread === null ? "–" : `${n(r.cpu.busiestThread.msPerAppend, 2)} ms (${n(r.cpu.busiestThread.coresBusy * 100)}% of a core)`,
        `${n(r.cpu.allCoresBoundAppendsPerSecond)} / ${n(r.cpu.oneThreadBoundAppendsPerSecond)} per s`,
        r.writerBoundAppendsPerSecond === null ? "–" : `${n(r.writerBoundAppendsPerSecond)} per s`,
        r.placements === null ? "–" : Object.values(r.placements).join(" / "),
        `${n(r.otherWorkCoresBusy, 2)} cores`,
      ]),
    ),
    "",
  );

  out.push(
    `Latency is each append's, from send to the last byte of the response. CPU is read from /proc around the timed load: "workerd" is every workerd process of the row's \`wrangler dev\` (the Worker's, which runs the Worker, its objects and local D1 on one main thread, and wrangler's dev proxy in front of it); the busiest thread is the Worker's main thread. ` +
      `The all-cores bound is the machine's ${env.machine.cores} cores ÷ workerd CPU per append; the one-thread bound is 1 ÷ the busiest thread's CPU per append, the most that thread could do if it never waited (it also waits on the disk for local SQLite's writes, so a row it binds runs below it), and the lower of the two applies because workerd does not spread one Worker's isolate over cores. ` +
      `"Other work" is what the whole machine's CPU did during the load beyond this row's processes and the client (from /proc/stat), in cores: work of other programs sharing the machine.`,
    "",
  );
  out.push(...findings(rows, s, env));
  return out;
}

/**
 * What the rows show, in sentences the numbers decide.
 * @param {any[]} rows @param {any} s @param {any} env
 * @returns {string[]}
 */
function findings(rows, s, env) {
  const out = [];
  const local = rows.filter((r) => !r.simulated);
  /** @type {Map<number, any[]>} */
  const byMode = new Map();
  for (const r of rows.filter((row) => row.simulated)) byMode.set(r.statementMs, [...(byMode.get(r.statementMs) ?? []), r]);
  const series = (/** @type {any[]} */ list) => list.map((r) => n(r.appendsPerSecond, 0)).join(" → ");
  const against = (/** @type {any[]} */ list) => list.slice(1).map((r) => `${r.shards} shards ${pct(r.appendsPerSecond / list[0].appendsPerSecond)}`).join(", ");
  const meanOf = (/** @type {number[]} */ v) => v.reduce((a, b) => a + b, 0) / v.length;
  const threadMs = (/** @type {any[]} */ list) => meanOf(list.map((r) => r.cpu.busiestThread?.msPerAppend ?? NaN));

  const thread = (/** @type {any} */ r) => n(r.cpu.busiestThread?.msPerAppend, 2);
  const localFirst = local[0];
  const localLast = local.at(-1);
  out.push(
    `**Local D1 (measured):** ${series(local)} appends/s with ${local.map((r) => r.shards).join(", ")} shards (${against(local)} against 1). ` +
      "Every local shard's SQLite is served by the Worker's own workerd thread, the one that runs the Worker and its objects, so a shard adds no thread locally; " +
      `what moved with the shard count is that thread's CPU per append, ${local.map(thread).join(" → ")} ms` +
      (localFirst !== undefined && localLast !== undefined && localLast !== localFirst
        ? ` (that alone is worth ${pct(localFirst.cpu.busiestThread.msPerAppend / localLast.cpu.busiestThread.msPerAppend)} from ${localFirst.shards} to ${localLast.shards} shards; measured ${pct(localLast.appendsPerSecond / localFirst.appendsPerSecond)}): throughput follows the thread's CPU per append, and the thread, on CPU ${local.map((r) => `${n(r.cpu.busiestThread.coresBusy * 100)}%`).join(" / ")} of the time, is the bound.`
        : "."),
  );
  for (const [ms, list] of byMode) {
    const rowsSaid = list.map((r) =>
      writerBound(r)
        ? `${r.shards}: ${n(r.appendsPerSecond, 0)}, ${n((r.appendsPerSecond / r.writerBoundAppendsPerSecond) * 100)}% of its writers' ${n(r.writerBoundAppendsPerSecond)}, its thread's CPU allowing ${n(r.cpu.oneThreadBoundAppendsPerSecond)} — the writers bind`
        : `${r.shards}: ${n(r.appendsPerSecond, 0)}, ${n((r.appendsPerSecond / r.writerBoundAppendsPerSecond) * 100)}% of its writers' ${n(r.writerBoundAppendsPerSecond)}` +
          `${local.find((l) => l.shards === r.shards) === undefined ? "" : ` and ${n((r.appendsPerSecond / local.find((l) => l.shards === r.shards).appendsPerSecond) * 100)}% of the local row's rate`} — the Worker's thread binds (${n(r.cpu.busiestThread?.coresBusy * 100)}% of a core)`,
    );
    const firstCpu = list.find((r) => !writerBound(r));
    const last = list.at(-1);
    out.push(
      `**Simulated at ${ms} ms/statement:** ${series(list)} appends/s (${against(list)} against 1). By shard count: ${rowsSaid.join("; ")}. ` +
        (firstCpu === undefined
          ? `Throughput grows with the shards as their writers allow, at every shard count measured.`
          : firstCpu === list[0]
            ? `Even one shard's writers allow more than the Worker's thread does here, so **the Worker's own thread is the bound from 1 shard on**, at ${n(Math.max(...list.map((r) => r.appendsPerSecond)))} appends/s at most.`
            : `Throughput grows with the shards while their writers bind; **from ${firstCpu.shards} shards the Worker's own thread is the bound**, as in the local rows: ${n(last?.appendsPerSecond)} appends/s at ${last?.shards} shards.`),
    );
  }
  const slow = [...rows].sort((x, y) => x.appendsPerSecond - y.appendsPerSecond)[0];
  const fast = [...rows].sort((x, y) => y.appendsPerSecond - x.appendsPerSecond)[0];
  if (slow !== undefined && fast !== undefined && slow !== fast) {
    out.push(
      `The thread's CPU per append is not a constant: ${thread(slow)} ms in the slowest row (${n(slow.appendsPerSecond, 0)} appends/s) against ${thread(fast)} ms in the fastest (${n(fast.appendsPerSecond, 0)}); most likely because a busier event loop spreads its fixed costs over more appends. So each row's bounds are its own, and the CPU figure of a writer-bound row is not what the same Worker would need at full speed.`,
    );
  }
  const inFlight = Math.min(...rows.map((r) => r.meanInFlight / r.clients));
  const clientBusy = Math.max(...rows.map((r) => r.clientCoresBusy));
  out.push(
    `**The client is not the bound:** in every row the ${n(s.conversations)} clients had at least ${n(inFlight * 100)}% of themselves waiting on an append at any time on average (Little's law: throughput × mean latency ÷ clients), and the client process used at most ${n(clientBusy, 2)} of a core.`,
  );
  const other = Math.max(...rows.map((r) => r.otherWorkCoresBusy));
  if (other > 0.25) {
    out.push(
      `**Other work shared the machine** (up to ${n(other, 2)} of its ${env.machine.cores} cores during a load): the Worker's thread then got less than a core, which lowers that row's appends/s and raises its latency. The CPU per append and the bounds derived from it are the steadier figures; read the appends/s against the other-work column.`,
    );
  }
  out.push(`The section took ${n(s.seconds)} s (${rows.length} rows and the isolate check, each on a Worker of its own).`);
  return out.map((p) => `${p}\n`);
}

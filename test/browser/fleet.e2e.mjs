// The fleet page end to end, in a real browser, the way inspector.e2e.mjs drives the inspector:
// the real Worker under `wrangler dev` (its own local state in a temporary directory, a loopback
// port), the demo conversation replayed by `npm run demo`'s own script, then headless Chromium
// signs in and opens /inspector/fleet and the demo conversation's page. It checks that the charts
// are drawn (inline SVG, under the inspector's CSP, with no script or CSP error) and that no
// message text of the demo is on the fleet page, and saves test-results/fleet.png (the picture
// in docs/fleet.png).
//
// Needs a Chromium binary (Debian: `apt-get install chromium`; CHROMIUM_PATH overrides
// /usr/bin/chromium). Run it with `node --test test/browser/fleet.e2e.mjs`.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { PEOPLE, SESSIONS } from "../../scripts/demo/conversation.mjs";
import { DEMO_BOT_ID, ROOT } from "../../scripts/lib/local-state.mjs";
import { applyMigrations, createToken, freePort, snapshotApp, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const RESULTS = join(ROOT, "test-results");

/** @type {import("../../scripts/lib/worker.mjs").RunningWorker} */
let worker;
/** @type {import("playwright-core").Browser} */
let browser;
let token = "";
let conversationUrl = "";
const scratch = mkdtempSync(join(tmpdir(), "foldline-fleet-"));

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  const appDir = join(scratch, "app");
  const persistDir = join(scratch, "state");
  snapshotApp(ROOT, appDir, "worktree");
  applyMigrations(ROOT, appDir, persistDir);
  token = createToken(ROOT, appDir, persistDir, ["*", "agent:*"], "fleet-test");
  const secret = "fleet-test-webhook-secret";
  const envFile = join(scratch, "test.env");
  // No OPENAI_API_KEY: the offline compactor runs, so nothing leaves loopback.
  await writeEnvFile(envFile, { [`TELEGRAM_WEBHOOK_SECRET_${DEMO_BOT_ID}`]: secret, COMPACTION_RETRY_BASE_SECONDS: "1" });
  worker = await startWorker({ root: ROOT, appDir, persistDir, envFile, port: await freePort(8798), logPath: join(scratch, "wrangler.log"), log: () => {} });

  const demo = await run(process.execPath, [join(ROOT, "scripts", "demo.mjs"), "--quiet", "--url", worker.url], { FOLDLINE_TOKEN: token, FOLDLINE_TELEGRAM_SECRET: secret });
  assert.equal(demo.code, 0, `npm run demo failed:\n${demo.output}`);
  const link = /Inspect it: (\S+)/.exec(demo.output)?.[1];
  assert.ok(link !== undefined, `the demo printed no inspector link:\n${demo.output}`);
  conversationUrl = link;

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // As root in a container Chromium needs --no-sandbox; the rest keep it off the network.
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  await worker?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** @param {string} command @param {string[]} args @param {Record<string, string>} env */
function run(command, args, env) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("exit", (code) => resolve({ code, output }));
  });
}

test("the fleet page draws the demo's compactions and lists its conversation, with no message text", async () => {
  const conversation = decodeURIComponent(new URL(conversationUrl).pathname.split("/").at(-1) ?? "");
  const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
  /** @type {string[]} */
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(`${message.text()} (${message.location().url})`);
  });
  await page.goto(`${worker.url}/inspector/login#token=${token}`);
  await page.waitForURL(`${worker.url}/inspector`);
  await page.getByTestId("fleet-link").click();
  await page.waitForURL(`${worker.url}/inspector/fleet`);

  // The demo's boundaries settled this hour: one bar and one dot, drawn with a size.
  const lag = page.getByTestId("lag-chart");
  assert.equal(await lag.count(), 1);
  const hours = page.getByTestId("lag-hour");
  assert.ok((await hours.count()) >= 1);
  assert.ok(Number(await hours.last().getAttribute("data-settled")) >= 3, "the demo settled at least three boundaries");
  const median = await hours.last().locator('rect[data-series="p50"]').boundingBox();
  assert.ok(median !== null && median.width > 0, "the median bar is drawn");

  // The demo conversation is among the busiest, linked to its page.
  const busy = page.locator(`[data-testid="busy-conversation"][data-conversation="${conversation}"]`);
  assert.equal(await busy.count(), 1);
  assert.ok(Number(await busy.getAttribute("data-events")) > 0);

  // Ids, counts, kinds and codes only: no name or line of the demo's conversation.
  const text = await page.locator("body").innerText();
  for (const person of Object.values(PEOPLE)) assert.ok(!text.includes(person.username), `a username is on the fleet page: ${person.username}`);
  for (const line of SESSIONS.flatMap((session) => session.turns.map((turn) => turn.text))) assert.ok(!text.includes(line), "a message is on the fleet page");

  mkdirSync(RESULTS, { recursive: true });
  await page.screenshot({ path: join(RESULTS, "fleet.png"), fullPage: true });

  // The demo conversation's page draws its size against the trigger, with the plans that compacted it.
  await busy.locator("a").click();
  const sizes = page.getByTestId("context-size-chart");
  assert.equal(await sizes.count(), 1);
  assert.ok(Number(await sizes.getAttribute("data-plans")) >= 3);
  const box = await sizes.locator('polyline[data-series="active"]').boundingBox();
  assert.ok(box !== null && box.width > 0, "the size line is drawn");
  await sizes.screenshot({ path: join(RESULTS, "context-size.png") });

  assert.deepEqual(pageErrors, [], "no script or CSP errors on the pages");
  await page.close();
});

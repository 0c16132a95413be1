// The inspector end to end, in a real browser: the real Worker under `wrangler dev` (its own
// local D1, R2, Queues and Durable Objects in a temporary directory), the demo conversation
// replayed through the Telegram webhook by `npm run demo`'s own script, then headless Chromium
// signs in through the login link, opens the conversation, and checks the chain verdict and the
// context bar against what the API says; then it opens the API reference and finds every
// operation of /openapi.json on it; then it opens the fleet page and the demo conversation's
// context size from there. It saves screenshots to test-results/: inspector.png (the page from
// the top through the chain-health panel), inspector-full.png (the whole page), reference.png,
// fleet.png and context-size.png.
//
// Needs a Chromium binary: CHROMIUM_PATH, else Debian's /usr/bin/chromium (`apt-get install
// chromium`, which needs root), else a browser playwright-core installed in the user's cache
// (`npx playwright-core install chromium`); nothing is downloaded here. Without one the tests are
// skipped with a line saying so, except under CI=true, where a missing browser fails (.ci/run
// installs Debian's). The Worker listens on FOLDLINE_PORT when that is set and free, else on a
// free loopback port. docs/inspector.png and docs/fleet.png are copies of inspector.png and
// fleet.png. `npm test` never runs this file; `npm run test:browser` does.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { PEOPLE, SESSIONS } from "../../scripts/demo/conversation.mjs";
import { DEMO_AGENT_ID, DEMO_POLICY } from "../../scripts/lib/demo-agent.mjs";
import { localPort } from "../../scripts/lib/local-port.mjs";
import { DEMO_BOT_ID, ROOT } from "../../scripts/lib/local-state.mjs";
import { applyMigrations, createToken, freePort, snapshotApp, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";

/**
 * The Chromium to drive, or why there is none: CHROMIUM_PATH when set (and only it), else
 * Debian's, else the one this playwright-core version installs (its full browser, then its
 * headless shell of the same revision).
 * @returns {{ path: string } | { missing: string }}
 */
function findChromium() {
  const wanted = process.env.CHROMIUM_PATH;
  if (wanted !== undefined && wanted !== "") return existsSync(wanted) ? { path: wanted } : { missing: `CHROMIUM_PATH=${wanted} does not exist` };
  if (existsSync("/usr/bin/chromium")) return { path: "/usr/bin/chromium" };
  /** @type {string | undefined} */
  let managed;
  try {
    managed = chromium.executablePath();
  } catch {
    // a platform playwright-core has no build for
  }
  if (managed !== undefined && existsSync(managed)) return { path: managed };
  const cache = managed === undefined ? join(homedir(), ".cache", "ms-playwright") : dirname(dirname(dirname(managed)));
  const shellDir = managed === undefined ? undefined : join(cache, basename(dirname(dirname(managed))).replace(/^chromium-/, "chromium_headless_shell-"));
  for (const sub of shellDir !== undefined && existsSync(shellDir) ? readdirSync(shellDir) : []) {
    const shell = join(shellDir ?? "", sub, "chrome-headless-shell");
    if (existsSync(shell)) return { path: shell };
  }
  return { missing: `no CHROMIUM_PATH, no /usr/bin/chromium, and no browser of this playwright-core in ${cache}` };
}

const found = findChromium();
const CHROMIUM = "path" in found ? found.path : undefined;
// Under CI a missing browser is a failure (before() says why); elsewhere the tests are skipped.
const SKIP = CHROMIUM === undefined && process.env.CI !== "true" ? "no Chromium" : undefined;
if (SKIP !== undefined && "missing" in found) {
  console.log(`test:browser skipped: ${found.missing}. Install Debian's chromium (apt-get install chromium, as root) or set CHROMIUM_PATH.`);
}
const RESULTS = join(ROOT, "test-results");
const SCREENSHOT = join(RESULTS, "inspector.png");

/** @type {import("../../scripts/lib/worker.mjs").RunningWorker} */
let worker;
/** @type {import("playwright-core").Browser} */
let browser;
let token = "";
let conversationUrl = "";
const scratch = mkdtempSync(join(tmpdir(), "foldline-browser-"));

before(async () => {
  if (SKIP !== undefined) return;
  assert.ok(CHROMIUM !== undefined, `no Chromium (${"missing" in found ? found.missing : ""}): CI installs Debian's (.ci/run); install it (apt-get install chromium) or set CHROMIUM_PATH`);
  const appDir = join(scratch, "app");
  const persistDir = join(scratch, "state");
  snapshotApp(ROOT, appDir, "worktree");
  applyMigrations(ROOT, appDir, persistDir);
  token = createToken(ROOT, appDir, persistDir, ["*", "agent:*"], "browser-test");
  const secret = "browser-test-webhook-secret";
  const envFile = join(scratch, "test.env");
  // No OPENAI_API_KEY: the offline compactor runs, so nothing leaves loopback.
  await writeEnvFile(envFile, { [`TELEGRAM_WEBHOOK_SECRET_${DEMO_BOT_ID}`]: secret, QUEUE_RETRY_BASE_SECONDS: "1" });
  worker = await startWorker({
    root: ROOT,
    appDir,
    persistDir,
    envFile,
    port: await workerPort(),
    logPath: join(scratch, "wrangler.log"),
    log: () => {},
  });

  const demo = await run(process.execPath, [join(ROOT, "scripts", "demo.mjs"), "--quiet", "--url", worker.url], {
    FOLDLINE_TOKEN: token,
    FOLDLINE_TELEGRAM_SECRET: secret,
  });
  assert.equal(demo.code, 0, `npm run demo failed:\n${demo.output}`);
  const link = /Inspect it: (\S+)/.exec(demo.output)?.[1];
  assert.ok(link !== undefined, `the demo printed no inspector link:\n${demo.output}`);
  conversationUrl = link;

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // As root in a container Chromium needs --no-sandbox; the rest keep it off the network.
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
});

after(async () => {
  await browser?.close();
  await worker?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** FOLDLINE_PORT when it is set and free (npm start may hold it: the test runs its own Worker), else a free one. */
async function workerPort() {
  if (!process.env.FOLDLINE_PORT) return freePort(0);
  const wanted = localPort();
  const port = await freePort(wanted);
  if (port !== wanted) console.log(`FOLDLINE_PORT ${wanted} is in use (npm start?): the test's own Worker listens on ${port} instead`);
  return port;
}

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

/** @param {string} path */
async function api(path) {
  const response = await fetch(`${worker.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
  return response.json();
}

test("the inspector shows the demo's verified chain, its amendment and the context bar", { skip: SKIP }, async () => {
  const conversation = decodeURIComponent(new URL(conversationUrl).pathname.split("/").at(-1) ?? "");
  const base = `/v1/conversations/${encodeURIComponent(conversation)}`;
  const [context, audit] = await Promise.all([api(`${base}/context?agent=${DEMO_AGENT_ID}`), api(`${base}/verify?agent=${DEMO_AGENT_ID}`)]);
  const currentLinks = audit.epochs.find((/** @type {{ current: boolean }} */ e) => e.current).links;

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  /** @type {string[]} */
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(`${message.text()} (${message.location().url})`);
  });

  // The printed login link carries the token in the fragment, which the browser never sends.
  await page.goto(`${worker.url}/inspector/login#token=${token}`);
  await page.waitForURL(`${worker.url}/inspector`);
  const cookies = await page.context().cookies();
  const session = cookies.find((cookie) => cookie.name === "foldline_inspector");
  assert.ok(session?.httpOnly, "the session cookie is HttpOnly");
  assert.ok(session !== undefined && session.value.startsWith("fls_") && !session.value.includes(token), "the cookie holds a session id, never the token");

  // The conversation list links to the demo conversation.
  const listed = page.locator(`a[href*="${encodeURIComponent(conversation)}"]`);
  assert.ok((await listed.count()) >= 1, "the conversations list shows the demo conversation");
  await page.goto(conversationUrl);

  // Chain verification: valid, one row per link, as many as the API's audit.
  const verdict = page.getByTestId("chain-verdict");
  assert.equal(await verdict.getAttribute("data-valid"), "true");
  assert.equal(Number(await verdict.getAttribute("data-links")), currentLinks.length);
  assert.ok(currentLinks.length >= 3, `at least three boundaries (${currentLinks.length})`);
  const linkRows = page.getByTestId("chain-link");
  assert.ok((await linkRows.count()) >= currentLinks.length);
  for (const row of await linkRows.all()) assert.equal(await row.getAttribute("data-valid"), "true");
  assert.ok((await page.getByTestId("boundary").count()) >= 3);

  // The context bar: the three parts the API serves, against the policy's lines.
  const bar = page.getByTestId("context-bar");
  await bar.scrollIntoViewIfNeeded();
  assert.equal(Number(await bar.getAttribute("data-trigger")), DEMO_POLICY.triggerInputChars);
  assert.equal(Number(await bar.getAttribute("data-retain")), DEMO_POLICY.retainInputChars);
  /** @type {Record<string, number>} */
  const segments = {};
  for (const segment of await bar.locator("[data-segment]").all()) {
    segments[String(await segment.getAttribute("data-segment"))] = Number(await segment.getAttribute("data-chars"));
    const box = await segment.boundingBox();
    assert.ok(box !== null && box.width > 0, `segment ${await segment.getAttribute("data-segment")} is drawn`);
  }
  assert.equal(segments.boundary, context.manifest.boundary.envelopeChars);
  assert.equal(segments.amendment, context.manifest.amendment.envelopeChars);
  assert.ok(segments.tail > 0);
  assert.equal(Number(await bar.getAttribute("data-total")), (segments.boundary ?? 0) + (segments.amendment ?? 0) + (segments.tail ?? 0));

  // Runs and the timeline are there, a page at a time; every compaction run that completed is counted as completed.
  const completed = page.locator('[data-testid="run-count"][data-status="completed"]');
  assert.ok(Number(await completed.getAttribute("data-count")) >= currentLinks.length);
  assert.ok((await page.getByTestId("run").count()) > 0);
  assert.ok((await page.getByTestId("event").count()) > 0);

  mkdirSync(RESULTS, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));
  // From the top through the chain-health panel: what docs/inspector.png shows.
  const health = await page.locator("section", { has: page.getByTestId("chain-health") }).boundingBox();
  assert.ok(health !== null, "the chain-health panel is drawn");
  await page.screenshot({ path: SCREENSHOT, fullPage: true, clip: { x: 0, y: 0, width: 1280, height: Math.max(900, Math.ceil(health.y + health.height + 10)) } });
  await page.screenshot({ path: join(RESULTS, "inspector-full.png"), fullPage: true });

  // Raw JSON one click away: the newest boundary's stored hash is the one the chain lists.
  const newest = currentLinks.at(-1);
  const jsonLink = page.locator(`[data-testid="boundary-json"][href*="${newest.boundaryId}"]`);
  assert.equal(await jsonLink.count(), 1);
  const raw = await (await page.context().request.get(new URL(String(await jsonLink.getAttribute("href")), worker.url).href)).json();
  assert.equal(JSON.stringify(raw).includes(context.manifest.boundary.hash), true, "the raw boundary JSON carries the served boundary's hash");
  const packetLink = page.locator(`[data-testid="packet-json"][href*="${newest.boundaryId}"]`);
  const packet = await page.context().request.get(new URL(String(await packetLink.getAttribute("href")), worker.url).href);
  assert.equal(packet.status(), 200);
  const packetText = await packet.text();
  JSON.parse(packetText); // throws, failing the test, unless the packet is JSON
  assert.ok(packetText.includes(JSON.stringify(conversation)), "the packet is the one compacted from this conversation");

  assert.deepEqual(pageErrors, [], "no script or CSP errors on the page");
  await page.close();
});

test("the API reference renders every operation of /openapi.json in the browser", { skip: SKIP }, async () => {
  const document = await (await fetch(`${worker.url}/openapi.json`)).json();
  const operationIds = Object.values(document.paths).flatMap((item) => Object.values(/** @type {Record<string, { operationId: string }>} */ (item)).map((op) => op.operationId));
  assert.ok(operationIds.length >= 20, `the document lists the API (${operationIds.length} operations)`);

  const page = await browser.newPage();
  /** @type {string[]} */
  const pageErrors = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(`${message.text()} (${message.location().url})`);
  });
  await page.goto(`${worker.url}/reference`);
  for (const id of operationIds) assert.equal(await page.locator(`#op-${id}`).count(), 1, `operation ${id} is on the page`);
  assert.ok(await page.locator("#op-appendEvent").isVisible());
  // The page's stylesheet applied, so its CSP hash matched: without it a section has no border.
  assert.equal(await page.locator("#op-appendEvent").evaluate((el) => getComputedStyle(el).borderTopStyle), "solid");
  await page.screenshot({ path: join(RESULTS, "reference.png") });
  assert.deepEqual(pageErrors, [], "no script or CSP errors on the reference page");
  await page.close();
});

test("the fleet page draws the demo's compactions and lists its conversation, with no message text", { skip: SKIP }, async () => {
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

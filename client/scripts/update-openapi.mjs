// `npm run client:openapi`: refreshes client/openapi.json from the Worker's own /openapi.json and
// regenerates client/openapi.ts from it. Run it after changing a route, its schemas or its prose;
// test/client/openapi-snapshot.test.ts fails until you do. The document depends on code only, so
// the Worker runs under `wrangler dev` from a snapshot of the sources with empty local state, on a
// free loopback port, and is stopped (with its workerd) before this exits.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../../scripts/lib/local-state.mjs";
import { freePort, snapshotApp, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { openApiTypes } from "./openapi-types.mjs";

const scratch = mkdtempSync(join(tmpdir(), "foldline-openapi-"));
try {
  const appDir = join(scratch, "app");
  snapshotApp(ROOT, appDir, "worktree");
  const envFile = join(scratch, "empty.env");
  await writeEnvFile(envFile, {});
  const worker = await startWorker({
    root: ROOT,
    appDir,
    persistDir: join(scratch, "state"),
    envFile,
    port: await freePort(0),
    logPath: join(scratch, "wrangler.log"),
    log: () => {},
  });
  let document;
  try {
    const response = await fetch(`${worker.url}/openapi.json`);
    if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
    document = await response.json();
  } finally {
    await worker.stop();
  }
  writeFileSync(join(ROOT, "client", "openapi.json"), `${JSON.stringify(document, null, 2)}\n`);
  writeFileSync(join(ROOT, "client", "openapi.ts"), await openApiTypes(document));
  console.log("client/openapi.json and client/openapi.ts are up to date with the routes.");
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

// What `npm run deploy` must create before it deploys, decided from wrangler.toml and what the
// account already holds: pure, so the local half of a deploy is tested without an account
// (test/core/deploy-plan.test.ts). scripts/deploy.mjs runs the plan.

/** A placeholder database id (the repository's wrangler.toml carries zeros until a deploy fills them). */
const PLACEHOLDER_ID = /^0{8}-0{4}-0{4}-0{4}-0{12}$/;

/**
 * The resources a wrangler.toml names (the subset of TOML it uses: `[[table]]` headers and one
 * `key = "value"` per line): each D1 binding with its database's name and id, the R2 buckets, and
 * the queues, dead-letter queues included.
 * @param {string} tomlText
 * @returns {{ d1: { binding: string, name: string, id: string | undefined }[], buckets: string[], queues: string[] }}
 */
export function deployResources(tomlText) {
  /** @type {{ d1: { binding: string, name: string, id: string | undefined }[], buckets: string[], queues: string[] }} */
  const found = { d1: [], buckets: [], queues: [] };
  /** @type {string | undefined} */
  let table;
  /** @type {Record<string, string>} */
  let fields = {};
  const close = () => {
    if (table === "d1_databases" && fields.binding !== undefined && fields.database_name !== undefined) {
      found.d1.push({ binding: fields.binding, name: fields.database_name, id: fields.database_id });
    }
    if (table === "r2_buckets" && fields.bucket_name !== undefined) found.buckets.push(fields.bucket_name);
    if (table === "queues.producers" || table === "queues.consumers") {
      for (const key of ["queue", "dead_letter_queue"]) {
        const name = fields[key];
        if (name !== undefined && !found.queues.includes(name)) found.queues.push(name);
      }
    }
  };
  for (const raw of tomlText.split("\n")) {
    const line = raw.trim();
    const header = /^\[\[?([A-Za-z0-9_.]+)\]\]?$/.exec(line);
    if (header !== null) {
      close();
      table = header[1];
      fields = {};
      continue;
    }
    const pair = /^([A-Za-z0-9_]+)\s*=\s*"([^"]*)"/.exec(line);
    if (pair !== null && pair[1] !== undefined && pair[2] !== undefined) fields[pair[1]] = pair[2];
  }
  close();
  return found;
}

/**
 * The steps that make the account match wrangler.toml, in order: each D1 database that does not
 * exist is created; each binding whose id is not the existing database's (a placeholder, or a
 * database recreated) gets that id written; buckets and queues are ensured (their create is
 * idempotent: "already exists" is success). Running it again on a deployed account plans no
 * creation and no id, only the ensures.
 * @param {ReturnType<typeof deployResources>} resources
 * @param {{ name: string, uuid: string }[]} databases the account's D1 databases (`wrangler d1 list --json`)
 * @returns {({ kind: "create_d1", name: string } | { kind: "set_id", binding: string, name: string } | { kind: "ensure_bucket", name: string } | { kind: "ensure_queue", name: string })[]}
 */
export function deployPlan(resources, databases) {
  const existing = new Map(databases.map((db) => [db.name, db.uuid]));
  /** @type {ReturnType<typeof deployPlan>} */
  const steps = [];
  for (const db of resources.d1) if (!existing.has(db.name)) steps.push({ kind: "create_d1", name: db.name });
  for (const db of resources.d1) {
    const id = existing.get(db.name);
    if (id === undefined || db.id === undefined || db.id !== id || PLACEHOLDER_ID.test(db.id)) steps.push({ kind: "set_id", binding: db.binding, name: db.name });
  }
  for (const name of resources.buckets) steps.push({ kind: "ensure_bucket", name });
  for (const name of resources.queues) steps.push({ kind: "ensure_queue", name });
  return steps;
}

/**
 * wrangler.toml with each named binding's `database_id` set, everything else (comments, order,
 * other tables) as it was. A table names its binding before its id, as this repository's does.
 * @param {string} tomlText
 * @param {Map<string, string>} ids database id by binding
 */
export function withDatabaseIds(tomlText, ids) {
  /** @type {string | undefined} */
  let binding;
  let inD1 = false;
  return tomlText
    .split("\n")
    .map((raw) => {
      const line = raw.trim();
      if (line.startsWith("[")) {
        inD1 = line === "[[d1_databases]]";
        binding = undefined;
      }
      if (!inD1) return raw;
      const named = /^binding\s*=\s*"([^"]*)"/.exec(line);
      if (named !== null) binding = named[1];
      const id = binding === undefined ? undefined : ids.get(binding);
      return id !== undefined && /^database_id\s*=/.test(line) ? raw.replace(/"[^"]*"/, `"${id}"`) : raw;
    })
    .join("\n");
}

/**
 * Whether a failed create only says the resource is there already (wrangler's wording for buckets
 * and queues), which for an ensure is success.
 * @param {string} output
 */
export function alreadyExists(output) {
  return /already exists|already taken|already own it|\b10004\b|\b11009\b/i.test(output);
}

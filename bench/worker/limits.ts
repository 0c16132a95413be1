import { AsyncLocalStorage } from "node:async_hooks";
import { interceptD1 } from "./d1-intercept";
import { mapDatabases } from "./databases";

/**
 * Cloudflare's per-invocation limits, which local workerd does not enforce, enforced for every
 * test (`PLATFORM_LIMITS = "enforce"` in vitest.config.ts): each invocation of the Worker (a request,
 * a queue batch) and of a conversation's object (an RPC call, an alarm) counts what it asks of
 * the platform, and a call past a limit throws as the platform would, naming the limit. A breach is
 * also kept (`takeBreaches`), so a test fails on one the code under test caught and logged
 * (test/limits-check.ts). Off in production and in `wrangler dev` (`"off"`); the bench reads the
 * worst case of each (`"report"`, `worstCase`).
 *
 * The limits (Workers Paid; Free's are kept as the worst case seen, not enforced):
 * https://developers.cloudflare.com/workers/platform/limits/, /d1/platform/limits/,
 * /queues/platform/limits/.
 */
export const LIMITS = {
  /** D1 queries per invocation (each statement of a batch is one). Free: 50. */
  d1Queries: 1_000,
  /** Subrequests per invocation: fetches, R2 operations, queue sends, calls to objects and services. Free: 50. */
  subrequests: 1_000,
  /** One `sendBatch`: messages, and bytes in all. */
  sendBatchMessages: 100,
  sendBatchBytes: 256 * 1024,
  /** One queue message. */
  messageBytes: 128 * 1024,
  /** One D1 statement: bound parameters, SQL length, one bound string or blob. */
  boundParameters: 100,
  sqlBytes: 100_000,
  boundBytes: 2_000_000,
} as const;

export type LimitName = keyof typeof LIMITS;

/** One invocation's counts. */
interface Invocation {
  readonly entry: string;
  d1Queries: number;
  subrequests: number;
  /** What the queries were, by the start of their SQL: a breach names the heaviest. */
  readonly queries: Map<string, number>;
}

const invocations = new AsyncLocalStorage<Invocation>();
const breaches: string[] = [];
const worst = new Map<LimitName, { value: number; entry: string }>();

function mode(env: Pick<Env, "PLATFORM_LIMITS">): "enforce" | "report" | "off" {
  // Typed by wrangler.toml's default ("off"); the tests' and the bench's vars say otherwise.
  const setting: string = env.PLATFORM_LIMITS;
  return setting === "enforce" || setting === "report" ? setting : "off";
}

let enforcing = false;

/** Records `value` against `limit` for `entry`; past it, a breach: kept, and thrown when enforcing. */
function check(limit: LimitName, value: number, entry: string, detail = ""): void {
  const seen = worst.get(limit);
  // A test's own probe of the limits (test/integration/platform-limits.test.ts) is not a worst case of the service's.
  if (!entry.startsWith("probe:") && (seen === undefined || value > seen.value)) worst.set(limit, { value, entry });
  if (value <= LIMITS[limit]) return;
  const message = `platform limit exceeded: ${limit} (${value} > ${LIMITS[limit]}) in ${entry}${detail === "" ? "" : `: ${detail}`}`;
  breaches.push(message);
  if (enforcing) throw new Error(message);
}

const counted = (what: "d1Queries" | "subrequests", n = 1, sql?: string): void => {
  const invocation = invocations.getStore();
  if (invocation === undefined) return;
  invocation[what] += n;
  if (sql !== undefined) {
    const start = sql.replace(/\s+/g, " ").trim().slice(0, 60);
    invocation.queries.set(start, (invocation.queries.get(start) ?? 0) + n);
  }
  const heaviest = what === "d1Queries" ? [...invocation.queries].sort(([, a], [, b]) => b - a).slice(0, 4).map(([q, k]) => `${k}× ${q}`).join("; ") : "";
  if (invocation[what] > LIMITS[what]) check(what, invocation[what], invocation.entry, heaviest);
  else check(what, invocation[what], invocation.entry);
};

/** Runs `work` as one invocation named `entry`, when the limits are on. */
export function invocation<T>(entry: string, env: Pick<Env, "PLATFORM_LIMITS">, work: () => T): T {
  const setting = mode(env);
  if (setting === "off") return work();
  enforcing = setting === "enforce";
  return invocations.run({ entry, d1Queries: 0, subrequests: 0, queries: new Map() }, work);
}

/** The breaches since the last call (a test's, when each test takes them). */
export function takeBreaches(): string[] {
  return breaches.splice(0);
}

/** The largest value each limit met so far, and where. */
export function worstCase(): Record<string, { value: number; limit: number; entry: string }> {
  return Object.fromEntries([...worst].map(([limit, seen]) => [limit, { ...seen, limit: LIMITS[limit] }]));
}

const encoder = new TextEncoder();
const bytes = (value: unknown): number =>
  typeof value === "string" ? encoder.encode(value).byteLength : value instanceof ArrayBuffer ? value.byteLength : ArrayBuffer.isView(value) ? value.byteLength : 0;
const entryOf = (): string => invocations.getStore()?.entry ?? "outside any invocation";

/** `db` with each statement checked (its SQL, parameters and values) and each one D1 runs counted as a query. */
function limitedD1(db: D1Database): D1Database {
  return interceptD1(
    db,
    (call, run) => {
      for (const sql of call.sql) counted("d1Queries", 1, sql);
      return run();
    },
    (sql, values) => {
      if (values.length === 0) check("sqlBytes", bytes(sql), entryOf(), sql.slice(0, 80));
      check("boundParameters", values.length, entryOf(), sql.slice(0, 80));
      for (const value of values) check("boundBytes", bytes(value), entryOf(), sql.slice(0, 80));
    },
  );
}

/** Every method call of `target` (a bucket, a service, a stub) is one subrequest. */
function subrequests<T extends object>(target: T): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        counted("subrequests");
        return Reflect.apply(value, object, args) as unknown;
      };
    },
  });
}

function limitedQueue(queue: Queue): Queue {
  return new Proxy(queue, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      // A send past a limit is refused as the platform refuses it: the returned promise rejects.
      return async (...args: unknown[]) => {
        counted("subrequests");
        if (property === "send") check("messageBytes", bytes(JSON.stringify(args[0])), entryOf());
        if (property === "sendBatch") {
          const messages = (args[0] ?? []) as readonly { body: unknown }[];
          check("sendBatchMessages", messages.length, entryOf());
          let total = 0;
          for (const message of messages) {
            const size = bytes(JSON.stringify(message.body));
            check("messageBytes", size, entryOf());
            total += size;
          }
          check("sendBatchBytes", total, entryOf());
        }
        return (await Reflect.apply(value, target, args)) as unknown;
      };
    },
  });
}

function limitedObjects(namespace: Env["CONVERSATION"]): Env["CONVERSATION"] {
  return new Proxy(namespace, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property !== "get" || typeof value !== "function") return typeof value === "function" ? value.bind(target) : value;
      return (...args: unknown[]) => subrequests(Reflect.apply(value, target, args) as object);
    },
  });
}

let fetchCounted = false;

/** `env` with what it asks of the platform counted against the invocation it runs in, when the limits are on. */
export function limitedEnv(env: Env): Env {
  if (mode(env) === "off") return env;
  if (!fetchCounted) {
    // Outgoing fetches (the model, the Bot API, a bot's webhook, alerts) are subrequests too.
    fetchCounted = true;
    const real = globalThis.fetch;
    globalThis.fetch = (...args: Parameters<typeof fetch>) => {
      counted("subrequests");
      return real(...args);
    };
  }
  const bound = env as unknown as Record<string, unknown>;
  const services = Object.fromEntries(
    Object.entries(bound).filter(([name, value]) => /^[A-Z][A-Z0-9_]*$/.test(name) && typeof value === "object" && value !== null && "fetch" in value && name !== "CONVERSATION" && name !== "DOCUMENTS"),
  );
  return {
    ...mapDatabases(env, (db) => limitedD1(db)),
    ...Object.fromEntries(Object.entries(services).map(([name, service]) => [name, subrequests(service as object)])),
    DOCUMENTS: subrequests(env.DOCUMENTS),
    JOB_QUEUE: limitedQueue(env.JOB_QUEUE),
    REPLY_QUEUE: limitedQueue(env.REPLY_QUEUE),
    CONVERSATION: limitedObjects(env.CONVERSATION),
  };
}

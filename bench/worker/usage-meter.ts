import type { D1Reads } from "./d1-meter";
import { D1Meter, meteredD1 } from "./d1-meter";
import { mapDatabases } from "./databases";

/**
 * What the deployment has used since this isolate started, for the benchmark's cost table: every
 * D1 statement (the Worker's, the queue consumer's and the conversation objects', requests and
 * alarms alike), R2 operations by billing class, queue messages sent and delivered, Durable Object
 * requests, and the bytes D1 and R2 hold. Counted only where `USAGE_METER = "on"` (the benchmark's
 * worker); a deployment without it gets its bindings back untouched.
 *
 * The counts live in this module, one per isolate. Locally (`wrangler dev`, the benchmark) the
 * Worker, its queue consumer and its objects share one isolate, so one ledger sees all of them;
 * on Cloudflare each isolate would count only its own share, which is why nothing but the
 * benchmark reads it.
 */

export interface Usage {
  readonly d1: D1Reads;
  /** The D1 databases' sizes in bytes, added up: each one's `meta.size_after` of its last statement. */
  readonly d1Bytes: number;
  /** The same per D1 binding (`DB`, `DB_SHARD_0`, …): what the control database and each shard hold. */
  readonly d1BytesByDatabase: Readonly<Record<string, number>>;
  /** R2 operations billed as Class A (put, list, multipart) and Class B (get, head). */
  readonly r2ClassA: number;
  readonly r2ClassB: number;
  /** Bytes put into R2 (deletes are not subtracted: Foldline never deletes a document). */
  readonly r2BytesPut: number;
  readonly queueSent: number;
  /** Messages handed to the consumer, each delivery counted (a retry is a second one). */
  readonly queueDelivered: number;
  readonly queueRetried: number;
  /** RPC calls into conversation objects, and their alarms: each is one billed request. */
  readonly objectRequests: number;
  /** Per statement (its SQL, whitespace collapsed, at most STATEMENT_CHARS), the statements that read or wrote most rows, at most TOP_STATEMENTS. */
  readonly statements: readonly StatementUsage[];
}

export interface StatementUsage {
  readonly sql: string;
  readonly calls: number;
  readonly rowsRead: number;
  readonly rowsWritten: number;
}

const STATEMENT_CHARS = 120;
/** Enough to name where the rows go, small enough for a response header. */
const TOP_STATEMENTS = 25;

class UsageLedger {
  readonly d1 = new D1Meter();
  /** D1's own `meta.size_after` of each database's last statement: the databases' sizes in bytes. */
  readonly #sizes = new Map<string, number>();
  r2ClassA = 0;
  r2ClassB = 0;
  r2BytesPut = 0;
  queueSent = 0;
  queueDelivered = 0;
  queueRetried = 0;
  objectRequests = 0;
  readonly #statements = new Map<string, { calls: number; rowsRead: number; rowsWritten: number }>();

  constructor() {
    this.d1.arm();
    this.d1.onResult = (result, query, database) => {
      if (typeof result.meta.size_after === "number") this.#sizes.set(database, result.meta.size_after);
      const sql = query.replace(/\s+/g, " ").trim().slice(0, STATEMENT_CHARS);
      const seen = this.#statements.get(sql) ?? { calls: 0, rowsRead: 0, rowsWritten: 0 };
      this.#statements.set(sql, { calls: seen.calls + 1, rowsRead: seen.rowsRead + (result.meta.rows_read ?? 0), rowsWritten: seen.rowsWritten + (result.meta.rows_written ?? 0) });
    };
  }

  snapshot(): Usage {
    const d1Bytes = [...this.#sizes.values()].reduce((sum, size) => sum + size, 0);
    const { r2ClassA, r2ClassB, r2BytesPut, queueSent, queueDelivered, queueRetried, objectRequests } = this;
    const statements = [...this.#statements]
      .map(([sql, counts]) => ({ sql, ...counts }))
      .sort((a, b) => b.rowsRead + b.rowsWritten - (a.rowsRead + a.rowsWritten))
      .slice(0, TOP_STATEMENTS);
    return { d1: this.d1.peek(), d1Bytes, d1BytesByDatabase: Object.fromEntries(this.#sizes), r2ClassA, r2ClassB, r2BytesPut, queueSent, queueDelivered, queueRetried, objectRequests, statements };
  }
}

const ledger = new UsageLedger();

export function usageMeterEnabled(env: Pick<Env, "USAGE_METER">): boolean {
  // Typed by wrangler.toml's default ("off"); a deployment's var may say otherwise.
  const setting: string = env.USAGE_METER;
  return setting === "on";
}

/** This isolate's usage so far. */
export const usageSnapshot = (): Usage => ledger.snapshot();

/** The response header a metered request (`x-foldline-d1-meter: on`) carries the usage in, as JSON. */
export const USAGE_HEADER = "x-foldline-usage";

const CLASS_A = new Set(["put", "list", "createMultipartUpload", "resumeMultipartUpload"]);
const CLASS_B = new Set(["get", "head"]);

function bytesOf(value: unknown): number {
  if (typeof value === "string") return new TextEncoder().encode(value).byteLength;
  if (value instanceof ArrayBuffer) return value.byteLength;
  if (ArrayBuffer.isView(value)) return value.byteLength;
  return 0;
}

function countedBucket(bucket: R2Bucket): R2Bucket {
  return new Proxy(bucket, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function" || typeof property !== "string") return value;
      return (...args: unknown[]) => {
        if (CLASS_A.has(property)) ledger.r2ClassA += 1;
        if (CLASS_B.has(property)) ledger.r2ClassB += 1;
        if (property === "put") ledger.r2BytesPut += bytesOf(args[1]);
        return Reflect.apply(value, target, args) as unknown;
      };
    },
  });
}

function countedQueue<T>(queue: Queue<T>): Queue<T> {
  return new Proxy(queue, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (property === "send") ledger.queueSent += 1;
        if (property === "sendBatch") ledger.queueSent += Array.isArray(args[0]) ? args[0].length : 0;
        return Reflect.apply(value, target, args) as unknown;
      };
    },
  });
}

/** Every method call on a stub is one RPC session, which Cloudflare bills as one request. */
function countedObjects(namespace: Env["CONVERSATION"]): Env["CONVERSATION"] {
  return new Proxy(namespace, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property !== "get" || typeof value !== "function") return typeof value === "function" ? value.bind(target) : value;
      return (...args: unknown[]) => {
        const stub = Reflect.apply(value, target, args) as object;
        return new Proxy(stub, {
          get(stubTarget, name) {
            const method: unknown = Reflect.get(stubTarget, name);
            if (typeof method !== "function") return method;
            return (...callArgs: unknown[]) => {
              ledger.objectRequests += 1;
              return Reflect.apply(method, stubTarget, callArgs) as unknown;
            };
          },
        });
      };
    },
  });
}

/** `env` with its bindings counted, when the deployment keeps the ledger (`USAGE_METER = "on"`); otherwise `env` itself. */
export function meteredEnv(env: Env): Env {
  if (!usageMeterEnabled(env)) return env;
  return {
    ...env,
    ...mapDatabases(env, (db, name) => meteredD1(db, ledger.d1, name)),
    DOCUMENTS: countedBucket(env.DOCUMENTS),
    JOB_QUEUE: countedQueue(env.JOB_QUEUE),
    REPLY_QUEUE: countedQueue(env.REPLY_QUEUE),
    CONVERSATION: countedObjects(env.CONVERSATION),
  };
}

/** A batch handed to the queue consumer: its deliveries, and those that are retries. */
export function countDeliveries(env: Env, messages: readonly { readonly attempts: number }[]): void {
  if (!usageMeterEnabled(env)) return;
  ledger.queueDelivered += messages.length;
  ledger.queueRetried += messages.filter((m) => m.attempts > 1).length;
}

/** An alarm of a conversation object: a billed request that no stub call counted. */
export function countAlarm(env: Env): void {
  if (usageMeterEnabled(env)) ledger.objectRequests += 1;
}

import { mapDatabases } from "../../bench/worker/databases";
import { interceptD1 } from "../../bench/worker/d1-intercept";

/**
 * Bindings that fail on purpose: every call the code makes to a D1 database, the R2 bucket, the
 * queue producer or (from the Worker) a conversation's Durable Object is counted, in the order it is made, on one `FaultPlan` shared by the Worker's
 * env and the conversation object's env (they run in one isolate, see README.md), and the plan's
 * k-th call fails in the plan's way. A call is what waits on the platform: a statement's
 * `run`/`all`/`first`/`raw`, one `batch`, `exec`; an R2 `get`/`head`/`put`/`list`/`delete`; a
 * queue `send`/`sendBatch`; an RPC method of a conversation's object. `prepare`, `bind` and getting
 * a stub wait on nothing and are not calls.
 *
 * The three ways a call fails, and what the platform did before it:
 * - `throw`: rejected before anything happened (D1's "Network connection lost", R2's 10001);
 * - `hang`: the call never answered and its deadline passed. Simulated as the timeout's own error,
 *   thrown at once after no work: nothing sleeps, so no run depends on the clock;
 * - `lost_response`: writes only; the platform committed, then the answer was lost (the same
 *   "Network connection lost" after the commit). A read's lost answer is a `throw`.
 */

export type FaultKind = "throw" | "hang" | "lost_response";

/** Which env made the call: the Worker's (handed to its fetch/queue handler) or the conversation object's. */
export type Side = "worker" | "object";

export interface BindingCall {
  /** 1-based position among the calls made while the plan was armed. */
  readonly index: number;
  readonly side: Side;
  /** `DB`, `DB_SHARD_1`, `DOCUMENTS`, `JOB_QUEUE`, `REPLY_QUEUE`, `CONVERSATION`. */
  readonly binding: string;
  /** `batch`, `run`, `put`, `send`, … */
  readonly method: string;
  /** Whether the call can change what is stored (so a `lost_response` applies). */
  readonly write: boolean;
  /** The statement(s) for D1, the key for R2: enough to say where a fault landed. */
  readonly detail: string;
}

/**
 * The error a faulted call rejects with: the platform's wording (D1's documented retryable errors,
 * R2's 10001), and a marker naming the injection. Only the wording can say "transient" to the code
 * under test: a binding's errors cross RPC as plain `Error`s, keeping their message and not their class.
 */
export class InjectedFault extends Error {
  constructor(
    message: string,
    readonly call: BindingCall,
    readonly kind: FaultKind,
  ) {
    super(`${message} [fault injected: ${kind} at call ${call.index}, ${call.side} ${call.binding}.${call.method}]`);
  }
  // The platform's errors are plain `Error`s; a classifier keyed on the name must see the same.
  override get name(): string {
    return "Error";
  }
}

export const PLATFORM_MESSAGES: Record<"d1" | "r2" | "queue" | "object", Record<"throw" | "hang", string>> = {
  d1: { throw: "D1_ERROR: Network connection lost.", hang: "D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset." },
  // R2 has no timeout code of its own: a call whose deadline passed loses its connection.
  r2: { throw: "We encountered an internal error. Please try again. (10001)", hang: "Network connection lost." },
  queue: { throw: "Queue send failed: internal error", hang: "Queue send failed: the operation timed out" },
  // A call into a conversation's object: the object was reset under it, or it never answered and
  // the runtime gave up on it (the object is then reset, which is what the caller is told).
  object: { throw: "Durable Object reset because its code was updated.", hang: "Durable Object storage operation exceeded timeout which caused object to be reset." },
};

/**
 * One run's schedule: counts the calls made while armed, fails the `k`-th in the way `kind` says
 * (once; every later call passes), and keeps the trace. A plan with no target only counts: a clean
 * run's trace says how many calls an operation makes and which of them write.
 */
export class FaultPlan {
  #armed = false;
  readonly trace: BindingCall[] = [];
  fired: BindingCall | undefined;

  constructor(readonly target?: { readonly k: number; readonly kind: FaultKind }) {}

  arm(): void {
    this.#armed = true;
  }

  disarm(): void {
    this.#armed = false;
  }

  /** Runs one binding call under the plan. */
  async call<T>(family: keyof typeof PLATFORM_MESSAGES, side: Side, binding: string, method: string, write: boolean, detail: string, real: () => Promise<T>): Promise<T> {
    if (!this.#armed) return real();
    const call: BindingCall = { index: this.trace.length + 1, side, binding, method, write, detail };
    this.trace.push(call);
    const target = this.target;
    const hit = target !== undefined && this.fired === undefined && call.index === target.k && (target.kind !== "lost_response" || write);
    if (!hit) return real();
    this.fired = call;
    if (target.kind === "lost_response") {
      await real();
      throw new InjectedFault(PLATFORM_MESSAGES[family].throw, call, target.kind);
    }
    throw new InjectedFault(PLATFORM_MESSAGES[family][target.kind], call, target.kind);
  }
}

const WRITE_SQL = /^\s*(?:INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b/i;
const CTE_WRITE_SQL = /^\s*WITH\b[\s\S]*\b(?:INSERT|UPDATE|DELETE|REPLACE)\b/i;
const writes = (sql: string): boolean => WRITE_SQL.test(sql) || CTE_WRITE_SQL.test(sql);
const brief = (sql: string): string => sql.replace(/\s+/g, " ").trim().slice(0, 80);

/** `db` with every call under `plan`. */
export function faultyD1(db: D1Database, binding: string, plan: FaultPlan, side: Side): D1Database {
  return interceptD1(db, (call, run) => plan.call("d1", side, binding, call.method, call.sql.some(writes), call.sql.map(brief).join(" ; "), run));
}

const R2_CALLS = new Set(["get", "head", "put", "list", "delete", "createMultipartUpload"]);
const R2_WRITES = new Set(["put", "delete", "createMultipartUpload"]);

export function faultyR2(bucket: R2Bucket, binding: string, plan: FaultPlan, side: Side): R2Bucket {
  return new Proxy(bucket, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (typeof property !== "string" || !R2_CALLS.has(property)) return value.bind(target);
      return (...args: unknown[]) =>
        plan.call("r2", side, binding, property, R2_WRITES.has(property), typeof args[0] === "string" ? args[0] : "", () => Reflect.apply(value, target, args) as Promise<unknown>);
    },
  });
}

export function faultyQueue<Body>(queue: Queue<Body>, binding: string, plan: FaultPlan, side: Side): Queue<Body> {
  return new Proxy(queue, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property !== "send" && property !== "sendBatch") return value.bind(target);
      return (...args: unknown[]) => plan.call("queue", side, binding, property, true, "", () => Reflect.apply(value, target, args) as Promise<unknown>);
    },
  });
}

/** The object's RPC methods that change nothing (a lost answer to one of them is a `throw`); every other method may. */
const OBJECT_READS = new Set(["runState", "context", "describeChain"]);

/** A stub whose every RPC method call is under `plan`. */
function faultyStub(stub: object, binding: string, plan: FaultPlan, side: Side): object {
  return new Proxy(stub, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function" || typeof property !== "string" || property === "then") return value;
      return (...args: unknown[]) => plan.call("object", side, binding, property, !OBJECT_READS.has(property), typeof args[0] === "string" ? args[0] : "", () => Reflect.apply(value, target, args) as Promise<unknown>);
    },
  });
}

/** A Durable Object namespace whose stubs are under `plan` (`get`/`getByName`; ids pass through). */
export function faultyNamespace<Namespace extends object>(namespace: Namespace, binding: string, plan: FaultPlan, side: Side): Namespace {
  return new Proxy(namespace, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property !== "get" && property !== "getByName") return value.bind(target);
      return (...args: unknown[]) => faultyStub(Reflect.apply(value, target, args) as object, binding, plan, side);
    },
  });
}

/** The object's storage calls, and which of them write. */
const STORAGE_CALLS: ReadonlyMap<string, boolean> = new Map([
  ["get", false],
  ["list", false],
  ["getAlarm", false],
  ["put", true],
  ["delete", true],
  ["deleteAll", true],
  ["setAlarm", true],
  ["deleteAlarm", true],
]);

/**
 * Puts a conversation object's own storage (`ctx.storage`: its placement, its wake-ups, its alarm)
 * under `plan`, in place: the object and its helpers hold this very storage object from their
 * constructors on, so its methods are replaced rather than the object swapped. While the plan is
 * disarmed every call passes straight through.
 */
export function faultStorage(storage: DurableObjectStorage, plan: FaultPlan): void {
  const methods = storage as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const [method, write] of STORAGE_CALLS) {
    const real = methods[method];
    if (typeof real !== "function") continue;
    const bound = real.bind(storage);
    methods[method] = (...args: unknown[]) => plan.call("object", "object", "STORAGE", method, write, typeof args[0] === "string" ? args[0] : "", () => bound(...args));
  }
}

/**
 * `env` with every D1 database, the R2 bucket and the queue producer under `plan`, and on the
 * Worker's side the conversations' objects too; every other binding as it was.
 */
export function faultyEnv(env: Env, plan: FaultPlan, side: Side): Env {
  const databases = mapDatabases(env, (db, name) => faultyD1(db, name, plan, side));
  const objects = side === "worker" ? { CONVERSATION: faultyNamespace(env.CONVERSATION, "CONVERSATION", plan, side) } : {};
  return { ...databases, ...objects, DOCUMENTS: faultyR2(env.DOCUMENTS, "DOCUMENTS", plan, side), JOB_QUEUE: faultyQueue(env.JOB_QUEUE, "JOB_QUEUE", plan, side), REPLY_QUEUE: faultyQueue(env.REPLY_QUEUE, "REPLY_QUEUE", plan, side) };
}

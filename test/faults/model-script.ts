import type { ScriptStep } from "../fake-openai/server";

/**
 * The model's HTTP edge: the loopback fake (test/fake-openai) answers from a script, so the k-th
 * model request of a run fails by scripting k − 1 ordinary answers and then the fault. `throw` is a
 * 500 from the provider; `hang` is the provider's 408, the timeout answered after no work (the
 * compactor maps it to its `timeout` kind, as it does the SDK's own deadline), so nothing sleeps.
 * A model call commits nothing, so it has no lost response. The fault project's workerd has this
 * fake to itself (vitest.faults.config.ts), so the default session is the matrix's.
 */
export class ModelScript {
  constructor(private readonly origin: string) {}

  /** Clears the recordings and scripts the next run: ordinary answers, or the k-th failing. */
  async reset(fault?: { readonly k: number; readonly kind: "throw" | "hang" }): Promise<void> {
    await this.#post("__reset", undefined);
    if (fault === undefined) return;
    const steps: ScriptStep[] = [...Array.from({ length: fault.k - 1 }, () => ({})), { status: fault.kind === "throw" ? 500 : 408 }];
    await this.#post("__script", steps);
  }

  /** How many completion requests reached the model since the last reset. */
  async requests(): Promise<number> {
    const response = await fetch(`${this.origin}/__requests`);
    return ((await response.json()) as unknown[]).length;
  }

  async #post(path: string, body: unknown): Promise<void> {
    const response = await fetch(`${this.origin}/${path}`, { method: "POST", ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`the fake model refused ${path}: ${response.status}`);
  }
}

import { DurableObject } from "cloudflare:workers";
import { Lifecycle } from "agents/lifecycle";
import type { SessionMessage } from "agents/sessions";
import { Sessions } from "agents/sessions";
import { catchUp, mirrorToFoldline } from "../../client/agents";
import type { FoldlineMirrorOptions } from "../../client/agents";
import { createClient, FoldlineError } from "../../client/index";
import type { FoldlineBinding } from "../../client/index";

/**
 * The Cloudflare Agents SDK's Sessions (`agents/sessions`) installed on a Durable Object as the
 * SDK's documentation installs it, with `foldline/agents` mirroring its writes into this Worker's
 * Foldline over the RPC entrypoint: what the tests of `foldline/agents` drive (test/client/agents.test.ts).
 * The vitest config binds it as AGENT_SESSIONS; production never deploys it.
 */

export interface HostMirror {
  readonly token: string;
  readonly conversation: string;
  readonly agent: string;
  /** Mirrors user messages as sensitive when their text contains this marker. */
  readonly sensitiveMarker?: string;
  /** A Foldline that never answers an append (a hung call), and how long the mirror waits for one. */
  readonly hung?: { readonly timeoutMs: number };
}

/** A message as the tests write it: one text part. */
export interface HostMessage {
  readonly id: string;
  readonly role: "user" | "assistant" | "system";
  readonly text: string;
}

const asSessionMessage = ({ id, role, text }: HostMessage): SessionMessage => ({ id, role, parts: [{ type: "text", text }] });

export class AgentSessionsHost extends DurableObject<Env> {
  readonly sessions = new Sessions();
  readonly lifecycle = Lifecycle.install(this).use(this.sessions);
  readonly session = this.sessions.session();
  #stop: (() => void) | undefined;
  /** What the mirror reported, as error codes (`FoldlineError`) or messages. */
  readonly #errors: string[] = [];

  #options(mirror: HostMirror): FoldlineMirrorOptions {
    const real = createClient({ binding: this.ctx.exports.FoldlineRpc as unknown as FoldlineBinding, token: mirror.token });
    const client = mirror.hung === undefined ? real : { ...real, append: () => new Promise<never>(() => {}), appendBatch: () => new Promise<never>(() => {}) };
    const marker = mirror.sensitiveMarker;
    return {
      client,
      conversation: mirror.conversation,
      agent: mirror.agent,
      author: (message) => ({ id: `person-${message.id.slice(0, 4)}` }),
      sensitive: (message) => marker !== undefined && message.parts.some((part) => part.type === "text" && "text" in part && String(part.text).includes(marker)),
      onError: (error) => this.#errors.push(error instanceof FoldlineError ? error.code : String(error)),
      ...(mirror.hung === undefined ? {} : { timeoutMs: mirror.hung.timeoutMs }),
    };
  }

  /** Starts mirroring the primary session into `mirror.conversation`. */
  mirror(mirror: HostMirror): void {
    this.#stop?.();
    this.#stop = mirrorToFoldline(this.sessions, this.#options(mirror));
  }

  /** Stops mirroring: later writes reach the session only. */
  unmirror(): void {
    this.#stop?.();
    this.#stop = undefined;
  }

  async append(message: HostMessage): Promise<boolean> {
    return (await this.session.appendMessage(asSessionMessage(message))).inserted;
  }

  async update(message: HostMessage): Promise<void> {
    await this.session.updateMessage(asSessionMessage(message));
  }

  async remove(ids: string[]): Promise<void> {
    await this.session.deleteMessages(ids);
  }

  async clear(): Promise<void> {
    await this.session.clearMessages();
  }

  /** `catchUp` over the primary session (its newest `lookBack` messages): how many events were new to the log. */
  async catchUp(mirror: HostMirror, lookBack?: number): Promise<number> {
    return catchUp(this.session, this.#options(mirror), lookBack);
  }

  /** What the mirror reported since the object started. */
  errors(): string[] {
    return [...this.#errors];
  }
}

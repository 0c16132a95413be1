import type { PeerMessage } from "./peer-sessions";

/**
 * The bench's door to the peer (bench/lib/peer-phase.mjs): `POST /bench/peer/<object>/<call>` with
 * a JSON body runs one call on the peer's object of that name, and `GET /bench/foldline-object/<conversation>`
 * reads the SQLite size of Foldline's own object for a conversation. Answered only by a Worker that
 * binds PEER_SESSIONS (the section's own, on loopback); every other Worker passes the path to the product.
 */

export const PEER_ROUTE_PREFIX = "/bench/";

/** The product's object, as the bench reads its size (bench/worker/index.ts adds `storageBytes`). */
interface SizedObject {
  storageBytes(): Promise<number>;
}

const isMessage = (value: unknown): value is PeerMessage => {
  if (typeof value !== "object" || value === null) return false;
  const { id, role, text } = value as Record<string, unknown>;
  return typeof id === "string" && (role === "user" || role === "assistant") && typeof text === "string";
};

const field = (body: Record<string, unknown>, name: string): string => {
  const value = body[name];
  if (typeof value !== "string") throw new TypeError(`${name}: a string`);
  return value;
};

/** The answer to a bench path, or null when this Worker does not serve it. */
export async function peerRoute(request: Request, env: Env): Promise<Response | null> {
  const namespace = env.PEER_SESSIONS;
  if (namespace === undefined) return null;
  const parts = new URL(request.url).pathname.slice(PEER_ROUTE_PREFIX.length).split("/").map(decodeURIComponent);
  if (parts[0] === "foldline-object" && parts.length === 2 && request.method === "GET") {
    const stub = env.CONVERSATION.get(env.CONVERSATION.idFromName(parts[1] ?? "")) as unknown as SizedObject;
    return Response.json({ databaseBytes: await stub.storageBytes() });
  }
  if (parts[0] !== "peer" || parts.length !== 3 || request.method !== "POST") return null;
  const peer = namespace.getByName(parts[1] ?? "");
  const raw: unknown = await request.json();
  const body = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
  const message = body["message"];
  switch (parts[2]) {
    case "open":
      return Response.json(await peer.open());
    case "append":
      if (!isMessage(message)) return Response.json({ error: "message: { id, role, text }" }, { status: 400 });
      return Response.json(await peer.append(message));
    case "edit":
      if (!isMessage(message)) return Response.json({ error: "message: { id, role, text }" }, { status: 400 });
      return Response.json(await peer.edit(message));
    case "history":
      return Response.json(await peer.history());
    case "search":
      return Response.json(await peer.search(field(body, "query"), Number(body["limit"] ?? 20)));
    case "search-each": {
      // One search per query (the SDK matches each as a phrase), in one request.
      const queries = Array.isArray(body["queries"]) ? body["queries"].filter((q): q is string => typeof q === "string") : [];
      const results = [];
      for (const query of queries) results.push(await peer.search(query, Number(body["limit"] ?? 20)));
      return Response.json(results);
    }
    case "add-compaction":
      return Response.json(await peer.addCompaction(field(body, "summary"), field(body, "from"), field(body, "to")));
    case "compactions":
      return Response.json(await peer.compactions());
    case "stats":
      return Response.json(await peer.stats());
    default:
      return Response.json({ error: `no call ${parts[2] ?? ""}` }, { status: 404 });
  }
}

/**
 * The layers of src/, and the shipped client beside it (client/), as rules (`npm run lint:deps`,
 * run by .ci/run). docs/ARCHITECTURE.md ("Layers") describes them; this file is what keeps the
 * description true. Type-only imports count: a type import is still a dependency on the
 * module's shape.
 * @type {import('dependency-cruiser').IConfiguration}
 */
/**
 * The two rules of a shipped module that plugs into a framework the bot brings (an optional peer
 * dependency): the client's rule plus the framework, and the framework's types only, so the module
 * neither loads a second copy of it nor makes a bundler pull one in.
 */
function peerPlugin(file, framework, modules, what) {
  const from = { path: `^client/${file}\\.ts$` };
  return [
    {
      name: `${file}-stands-alone`,
      severity: "error",
      comment: `client/${file}.ts is the shipped \`foldline/${file}\`, ${what} for ${framework}: the client's rule, plus ${framework} itself, the bot's own peer dependency.`,
      from,
      to: { reachable: true, pathNot: ["^client/[^/]+\\.ts$", "^src/core/errors\\.ts$", "^src/external/signature\\.ts$", modules] },
    },
    {
      name: `${file}-types-only`,
      severity: "error",
      comment: `The module runs inside the bot's ${framework}: it imports its types only.`,
      from,
      to: { path: modules, dependencyTypesNot: ["type-only"] },
    },
  ];
}

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A cycle makes two modules one module in disguise: neither can change or be read alone.",
      from: {},
      to: { circular: true },
    },
    {
      name: "core-is-pure",
      severity: "error",
      comment:
        "src/core is the contract as pure functions and schemas: it imports only itself and npm packages (zod, canonicalize), never a binding or another layer. " +
        "The platform modules it may use are node:crypto, for synchronous SHA-256 and constant-time comparison, and node:zlib, for the synchronous DEFLATE of an extracted page's stored text (core/page-packing): pure functions, the same under workerd's nodejs_compat and in Node.",
      from: { path: "^src/core/" },
      to: { pathNot: ["^src/core/", "^node_modules/", "^(node:)?(crypto|zlib)$"] },
    },
    {
      name: "storage-only-core",
      severity: "error",
      comment: "src/storage holds every D1 and R2 statement and maps rows to the core's shapes; it knows nothing above it.",
      from: { path: "^src/storage/" },
      to: { pathNot: ["^src/(core|storage)/", "^node_modules/"] },
    },
    {
      name: "below-api",
      severity: "error",
      comment:
        "src/api holds the operations the transports offer (HTTP, RPC and MCP); the object, the queue consumers and everything they share sit below it. " +
        "What the object and a route both need (served memory, for one) belongs in src/storage or src/core.",
      from: { path: "^src/", pathNot: ["^src/(api|http|rpc|mcp)/", "^src/index\\.ts$"] },
      to: { path: "^src/api/" },
    },
    {
      name: "shard-not-control",
      severity: "error",
      comment:
        "storage/shard holds the statements of a shard and storage/control those of the control database: neither imports the other. " +
        "A table both keep (the declarations' revision) has its statements at the root of src/storage.",
      from: { path: "^src/storage/(shard|control)/" },
      to: { path: "^src/storage/(shard|control)/", pathNot: "^src/storage/$1/" },
    },
    {
      name: "scripts-not-bench",
      severity: "error",
      comment: "The operator's scripts stand without the benchmark: what both use (the synthetic text) lives in scripts/lib, which the benchmark may import.",
      from: { path: "^scripts/" },
      to: { path: "^bench/" },
    },
    {
      name: "api-not-http",
      severity: "error",
      comment: "src/api holds the operations HTTP and RPC share; a transport may call it, never the other way round.",
      from: { path: "^src/api/" },
      to: { path: "^src/http/" },
    },
    {
      name: "mcp-not-http",
      severity: "error",
      comment: "src/mcp is a transport beside the routes (the MCP tools over src/api): the routes mount it, it never reaches into them.",
      from: { path: "^src/mcp/" },
      to: { path: "^src/http/" },
    },
    {
      name: "mcp-sdk-in-mcp-only",
      severity: "error",
      comment: "The MCP SDK is the MCP transport's alone: everything else speaks in src/api's Results, so the SDK can change without touching an operation.",
      from: { path: "^src/", pathNot: "^src/mcp/" },
      to: { path: "^node_modules/@modelcontextprotocol/" },
    },
    {
      name: "queue-not-http",
      severity: "error",
      comment: "The queue consumers run outside any request: what they share with a route belongs in src/api or below.",
      from: { path: "^src/queue/" },
      to: { path: "^src/http/" },
    },
    {
      name: "queue-is-an-entry",
      severity: "error",
      comment: "The queue consumers are an entry point like the routes: only the Worker's entry imports them. What a producer needs (the job shapes) lives in src/core.",
      from: { pathNot: ["^src/queue/", "^src/index\\.ts$"] },
      to: { path: "^src/queue/" },
    },
    {
      name: "durable-object-internals",
      severity: "error",
      comment: "The conversation's Durable Object is reached through src/durable/stub.ts (its calls and the types they carry); only the Worker's entry exports the class itself.",
      from: { pathNot: ["^src/durable/", "^src/index\\.ts$"] },
      to: { path: "^src/durable/", pathNot: "^src/durable/stub\\.ts$" },
    },
    {
      name: "entry-exports-only-the-object",
      severity: "error",
      comment: "The Worker's entry binds the Durable Object class and nothing else of its internals.",
      from: { path: "^src/index\\.ts$" },
      to: { path: "^src/durable/", pathNot: "^src/durable/(stub|conversation-object)\\.ts$" },
    },
    {
      name: "client-stands-alone",
      severity: "error",
      comment:
        "client/ is the shipped `foldline/client` (package.json exports): it must load in plain Node 20+ and in any Worker and install with no dependency, " +
        "so everything it reaches is its own files and the two service modules it ships (the error codes and the signature module, which import nothing): " +
        "no binding, no `cloudflare:` or `node:` module, no npm package, nothing else of the Worker. Type imports count too: its .d.ts must not need the Worker's types.",
      // The grammY plugin and the AI SDK middleware, files of client/ too, have the rules below instead.
      from: { path: "^client/[^/]+\\.ts$", pathNot: "^client/(grammy|ai-sdk|openai-agents|agents)\\.ts$" },
      to: { reachable: true, pathNot: ["^client/[^/]+\\.ts$", "^src/core/errors\\.ts$", "^src/external/signature\\.ts$"] },
    },
    {
      name: "grammy-plugin-stands-alone",
      severity: "error",
      comment:
        "client/grammy.ts is the shipped `foldline/grammy`: the client's rule, plus the Telegram mapping the webhook uses (core/telegram-message.ts and the " +
        "unsafe-character check it needs, both import-free, so a bot installs no zod) and grammY itself, the bot's own peer dependency.",
      from: { path: "^client/grammy\\.ts$" },
      to: {
        reachable: true,
        pathNot: ["^client/[^/]+\\.ts$", "^src/core/errors\\.ts$", "^src/external/signature\\.ts$", "^src/core/(telegram-message|unsafe-chars)\\.ts$", "^node_modules/grammy/"],
      },
    },
    {
      name: "grammy-types-only",
      severity: "error",
      comment: "The plugin runs inside the bot's grammY: it imports grammY's types only, so it neither loads a second copy nor makes a bundler pull one in.",
      from: { path: "^client/grammy\\.ts$" },
      to: { path: "^node_modules/grammy/", dependencyTypesNot: ["type-only"] },
    },
    ...peerPlugin("ai-sdk", "the AI SDK", "^node_modules/(ai|@ai-sdk/[^/]+)/", "a language-model middleware"),
    ...peerPlugin("openai-agents", "the OpenAI Agents SDK", "^node_modules/(@openai/[^/]+|openai|zod)/", "a session"),
    ...peerPlugin("agents", "the Cloudflare Agents SDK", "^node_modules/agents/", "a mirror of its Sessions"),
    {
      name: "product-not-instruments",
      severity: "error",
      comment:
        "The benchmark's instruments (the usage ledger, the D1 meter, the D1 simulation) live in bench/worker, which wraps the product's Worker and object; " +
        "src/ constructs none of them, so production runs without them.",
      from: { path: "^src/" },
      to: { path: "^bench/" },
    },
    {
      name: "service-not-client",
      severity: "error",
      comment: "The Worker never depends on its own client: the client ships modules of the service, not the other way round.",
      from: { path: "^src/" },
      to: { path: "^client/" },
    },
    {
      name: "no-unresolvable",
      severity: "error",
      comment: "An import that does not resolve would hide its layer from every rule above.",
      from: {},
      to: { couldNotResolve: true, pathNot: "^cloudflare:" },
    },
  ],
  options: {
    doNotFollow: { path: "^node_modules/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"] },
  },
};

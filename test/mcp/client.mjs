// An MCP client nobody on ucl wrote: the official TypeScript SDK. It drives
// a ucl MCP server through one conversation and prints one JSON document of
// what it saw, which test/mcp_e2e_test.go asserts.
//
//   node client.mjs stdio UCL_BINARY ARG...     spawn `ucl mcp` over stdio
//   node client.mjs http URL TOKEN              streamable HTTP with a bearer token
//
// The session id comes from UCL_MCP_SESSION (default "e2e").
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args, stderr: "inherit" });
} else if (mode === "http") {
  const [url, token] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  console.error("usage: client.mjs stdio BIN ARG... | http URL TOKEN");
  process.exit(2);
}

const session = process.env.UCL_MCP_SESSION || "e2e";
const client = new Client({ name: "ucl-e2e-ts", version: "1.0.0" });
await client.connect(transport);

const out = { server: client.getServerVersion() };
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.resources = (await client.listResources()).resources.map((r) => r.uri);
out.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate).sort();

// The SDK gives up on a request after 60 s. Under -race, beside the rest of
// `make test` on two cores, storing and then searching the ~900 KB turn
// below took longer than that once (the same test alone: ~25 s, at 9746e84
// as now); what is checked is the answer, so a request may take 5 minutes.
const opts = { timeout: 300000 };
async function call(name, args) {
  const r = await client.callTool({ name, arguments: args }, undefined, opts);
  return { isError: !!r.isError, text: r.content.map((c) => c.text).join("\n"), data: r.structuredContent };
}

// A conversation: a question, an answer replying to it, a follow-up.
const q = await call("uc_store", { content: "Which region hosts the Kafka cluster?", session, role: "user" });
const a = await call("uc_store", {
  content: "The Kafka cluster runs in eu-west-3, three brokers.",
  session, role: "assistant", parent: q.data.ids[0],
});
const f = await call("uc_store", { content: "Remind me to resize the brokers in June.", session, role: "user", parent: a.data.ids[0] });
out.stored = [q, a, f].map((r) => ({ isError: r.isError, ids: r.data?.ids, seqs: r.data?.seqs }));

const hits = await call("uc_query", { query: "kafka region", k: 5 });
out.query = { isError: hits.isError, ids: hits.data.hits.map((h) => h.id), text: hits.text };

const thread = await call("uc_get_thread", { id: a.data.ids[0] });
out.thread = thread.data.items.map((i) => i.id);

const res = await client.readResource({ uri: `uc://sessions/${session}` });
out.sessionResource = res.contents[0].text;

const idx = await call("uc_index", { query: "kafka brokers", budget: 500 });
out.index = { isError: idx.isError, matches: idx.data?.matches, tokens: idx.data?.tokens, text: idx.text };

const forgot = await call("uc_forget", { ids: [a.data.ids[0]], reason: "e2e" });
out.forget = { isError: forgot.isError, removed: forgot.data.removed, erasure: forgot.data.erasure, text: forgot.text };

const after = await call("uc_query", { query: "kafka region eu-west-3", k: 5 });
out.queryAfterForget = after.data.hits.map((h) => h.id);

const gone = await call("uc_get", { ids: [a.data.ids[0]] });
out.getForgotten = { isError: gone.isError, text: gone.text };

const bad = await call("uc_query", { query: "kafka", k: 500 });
out.badK = { isError: bad.isError, text: bad.text };

const status = await call("uc_status", {});
out.status = status.data;

// Issue 25's MCP fixes, as a client sees them.
const listed = await client.listTools();
out.fixes = { toolsListBytes: JSON.stringify(listed).length };
out.fixes.contextDescription = listed.tools.find((t) => t.name === "uc_context").description;
const wizard = await call("uc_store", { content: "I cast a spell", session, role: "wizard" });
out.fixes.wizard = { isError: wizard.isError, text: wizard.text };
const idxAll = await call("uc_index", {});
out.fixes.indexOverview = idxAll.data?.overview;
// Items without a session: found by name, and in today's period.
const notes = await call("uc_store", { content: "Deploy keys live in the vault.", kind: "document", meta: { name: "notes.md" } });
const fact = await call("uc_store", { content: "Kafka topics are replicated three times.", kind: "knowledge" });
const byName = await call("uc_get_document", { name: "notes.md" });
out.fixes.byName = { isError: byName.isError, id: byName.data?.id, want: notes.data?.ids?.[0] };
await call("uc_store", { content: "Other notes, in a session.", kind: "document", session, meta: { name: "notes.md" } });
const ambiguous = await call("uc_get_document", { name: "notes.md" });
out.fixes.ambiguous = { isError: ambiguous.isError, text: ambiguous.text };
const today = await call("uc_period", { period: "today" });
out.fixes.period = { ids: (today.data?.items || []).map((i) => i.id), want: [notes.data?.ids?.[0], fact.data?.ids?.[0]] };
const withSession = await call("uc_query", { query: "kafka", session, k: 3 });
out.fixes.querySession = { isError: withSession.isError, text: withSession.text };
// Bounded results: a 5 MB turn (3.4 MB over HTTP, whose handler takes
// requests up to 4 MiB), a 1.2 MB query.
// Near the largest event the engine takes (1 MiB, log.MaxEventSize).
const big = "A line of the big turn about the migration plan.\n".repeat(18000);
const bigStored = await call("uc_store", { content: big, session: session + "-big", role: "user" });
const bigID = bigStored.data?.ids?.[0];
const bigGet = await client.callTool({ name: "uc_get", arguments: { ids: [bigID] } }, undefined, opts);
const bigSession = await client.callTool({ name: "uc_get_session", arguments: { session: session + "-big" } }, undefined, opts);
const bigQuery = await client.callTool({ name: "uc_query", arguments: { query: "migration plan words ".repeat(60000) } }, undefined, opts);
const text = (r) => r.content.map((c) => c.text).join("\n");
out.fixes.bounded = {
  bigBytes: big.length,
  getBytes: JSON.stringify(bigGet).length,
  sessionBytes: JSON.stringify(bigSession).length,
  queryBytes: JSON.stringify(bigQuery).length,
  getMarker: /read on: uc_get \{"ids":\[".*"\],"offset":\d+\}/.test(text(bigGet)),
};
const next = await call("uc_get", { ids: [bigID], offset: bigGet.structuredContent?.items?.[0]?.next_offset || 0 });
out.fixes.bounded.readOn = next.data?.items?.[0]?.offset > 0 && big.startsWith(bigGet.structuredContent.items[0].content + next.data.items[0].content);

await client.close();
process.stdout.write(JSON.stringify(out) + "\n");

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

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
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

await client.close();
process.stdout.write(JSON.stringify(out) + "\n");

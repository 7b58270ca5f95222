// Derived memory through the official TypeScript SDK: spawns `ucl mcp`
// over stdio (with this process's environment, so that the model settings
// UCL_CONSOLIDATE_* reach it), stores two user turns when UCL_DERIVED_STORE
// is set, then calls uc_consolidate and uc_profile and prints one JSON
// document of what it saw, which test/mcp_derived_e2e_test.go asserts.
//
//   node derived.mjs UCL_BINARY ARG...
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
const client = new Client({ name: "ucl-e2e-derived", version: "1.0.0" });
await client.connect(transport);

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  return { isError: !!r.isError, text: r.content.map((c) => c.text).join("\n"), data: r.structuredContent };
}

const out = { stored: [] };
if (process.env.UCL_DERIVED_STORE) {
  for (const content of ["I am allergic to peanuts, please remember that.", "Book me an aisle seat, I always prefer aisle seats."]) {
    const r = await call("uc_store", { content, session: "trip", role: "user" });
    out.stored.push(r.data?.ids?.[0]);
  }
}
out.consolidate = await call("uc_consolidate", {});
out.profile = await call("uc_profile", {});
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");

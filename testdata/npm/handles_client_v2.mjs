// A real MCP client for the end-to-end tests, from the TypeScript SDK v2
// (@modelcontextprotocol/client), on protocol 2026-07-28 over streamable
// HTTP (no MCP session):
//
//   CODEBRIDGE_URL=http://127.0.0.1:PORT/mcp CODEBRIDGE_TOKEN=... node testdata/npm/handles_client_v2.mjs
//
// (It lives beside node_modules so that Node finds the SDK.) The SDK
// speaks 2025-11-25 unless asked to negotiate: it asks ("auto"). It calls
// run_python without a session, then again with the handle the first
// answer's structured content gave, and prints one JSON object:
// {"protocol", "first", "handle", "second", "second_error"}.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const client = new Client({ name: "codebridge-e2e-ts-v2", version: "1" }, { versionNegotiation: { mode: "auto" } });
const transport = new StreamableHTTPClientTransport(new URL(process.env.CODEBRIDGE_URL), {
  requestInit: { headers: { Authorization: "Bearer " + process.env.CODEBRIDGE_TOKEN } },
});
await client.connect(transport);
const text = (r) => r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
await client.listTools(); // learns the x-mcp-header of `session`
const first = await client.callTool({ name: "run_python", arguments: { code: "x = 41\nprint('set')" } });
const handle = first.structuredContent?.session;
const second = await client.callTool({ name: "run_python", arguments: { code: "print(x + 1)", session: handle } });
console.log(JSON.stringify({
  protocol: client.getNegotiatedProtocolVersion(), first: text(first), handle, second: text(second), second_error: !!second.isError,
}));
await client.close();

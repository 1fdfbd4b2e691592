// A TypeScript/JavaScript MCP SDK script that starts codebridge and runs one cell.
//   npm install @modelcontextprotocol/sdk
//   node client.mjs
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const client = new Client({ name: "my-agent", version: "1.0.0" });
// env: codebridge's settings (CODEBRIDGE_*) pass through; the SDK's
// default environment would keep only HOME, PATH and the like.
await client.connect(new StdioClientTransport({ command: "codebridge", env: process.env }));
const result = await client.callTool({ name: "run_python", arguments: { code: "print(6 * 7)" } });
console.log(result.content[0].text);
await client.close();

// A real MCP client for the end-to-end tests, from the TypeScript SDK,
// that answers elicitation requests the way a user would.
//
//   node testdata/npm/elicit_client.mjs MODE CODE [CODE...]
//
// (It lives beside node_modules so that Node finds the SDK.)
//
// It starts $CODEBRIDGE_BIN serve (with this process's environment), calls
// run_python with each CODE in turn, and prints one JSON object:
// {"asked": [messages it was asked], "results": [{"text", "isError"}]}.
// MODE is how it answers: accept, session (accept, and remember for the
// session), decline, ignore (never answers), or none (it does not offer
// elicitation at all); ada (accept, with the form of the everything
// server's elicitation filled in); sample (it offers sampling, not
// elicitation, and answers each request as a model would).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...codes] = process.argv.slice(2);
const capabilities = mode === "none" ? {} : mode === "sample" ? { sampling: {} } : { elicitation: {} };
const client = new Client({ name: "codebridge-e2e-elicit", version: "1" }, { capabilities });
const asked = [];
if (mode === "sample") {
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    const last = req.params.messages[req.params.messages.length - 1];
    asked.push(last.content.type === "text" ? last.content.text : last.content.type);
    return { role: "assistant", model: "ts-e2e-model", content: { type: "text", text: "the TypeScript model says 42" } };
  });
} else if (mode !== "none") {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    switch (mode) {
      case "accept":
        return { action: "accept", content: { session: false } };
      case "session":
        return { action: "accept", content: { session: true } };
      case "decline":
        return { action: "decline" };
      case "ada":
        return { action: "accept", content: { name: "Ada Lovelace", check: true } };
      default:
        return new Promise(() => {}); // the user never answers
    }
  });
}
const transport = new StdioClientTransport({
  command: process.env.CODEBRIDGE_BIN,
  args: ["serve"],
  env: process.env,
  stderr: "inherit",
});
await client.connect(transport);
const results = [];
for (const code of codes) {
  const r = await client.callTool({ name: "run_python", arguments: { code } }, undefined, { timeout: 180000 });
  const text = r.content.filter((c) => c.type === "text").map((c) => c.text).join("");
  results.push({ text, isError: !!r.isError });
}
console.log(JSON.stringify({ asked, results }));
await client.close();

// Runs the official MCP TypeScript SDK's client (npm @modelcontextprotocol/sdk, unchanged, pinned in
// package.json) against apps Parley publishes as MCP servers: initialize, the one tool of a
// Chatbot and of a Workflow app, a call of each with progress notifications, an argument the app
// refuses, and an unknown server code. Run by conformance/mcp_server_test.go (TestMCPNodeSDK)
// with:
//   PARLEY_MCP_CHAT_URL      the MCP URL of the `chatbot` app (parley apps mcp chatbot --enable)
//   PARLEY_MCP_WORKFLOW_URL  the MCP URL of a published copy of the example Workflow app
//   PARLEY_MCP_SCRIPT        {chat: {marker, chunks}, workflow: {marker, chunks}}: the fake model's replies

import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set; run this through go test -run TestMCPNodeSDK ./conformance/`);
  return v;
}

const chatURL = env("PARLEY_MCP_CHAT_URL");
const workflowURL = env("PARLEY_MCP_WORKFLOW_URL");
/** @type {{chat: {marker: string, chunks: string[]}, workflow: {marker: string, chunks: string[]}}} */
const script = JSON.parse(env("PARLEY_MCP_SCRIPT"));

async function connect(url) {
  const client = new Client({ name: "parley-conformance-node", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

test("a Chatbot as an MCP server", { timeout: 30_000 }, async () => {
  const client = await connect(chatURL);
  try {
    const server = client.getServerVersion();
    assert.equal(server.name, "Parley");
    assert.equal(typeof server.version, "string");
    assert.equal(client.getInstructions(), "Answers questions about Parley.");
    assert.deepEqual(client.getServerCapabilities(), { tools: {} });

    const { tools } = await client.listTools();
    assert.equal(tools.length, 1);
    assert.equal(tools[0].name, "chatbot");
    assert.deepEqual(tools[0].inputSchema, {
      type: "object",
      properties: {
        query: { type: "string", description: "User Input/Question content" },
        name: { description: "Who is asking", type: "string", maxLength: 20 },
        tone: { description: "", type: "string", enum: ["warm", "dry"] },
      },
      required: ["query", "tone"],
    });

    const progress = [];
    const res = await client.callTool(
      { name: "chatbot", arguments: { query: `Hello ${script.chat.marker}`, tone: "warm" } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    assert.equal(res.isError, undefined);
    assert.deepEqual(res.content, [{ type: "text", text: script.chat.chunks.join("") }]);
    assert.ok(progress.length >= 1, "a progress notification came before the answer");
    assert.ok(progress[0].progress >= 1);

    // An input the app's form refuses: invalid params, with the form's message.
    await assert.rejects(
      client.callTool({ name: "chatbot", arguments: { query: "Hi", tone: "loud" } }),
      (err) => err.code === -32602 && /tone in input form must be one of the following/.test(err.message),
    );
  } finally {
    await client.close();
  }
});

test("a Workflow app as an MCP server", { timeout: 30_000 }, async () => {
  const client = await connect(workflowURL);
  try {
    const { tools } = await client.listTools();
    assert.equal(tools.length, 1);
    assert.deepEqual(tools[0].inputSchema, {
      type: "object",
      properties: { topic: { description: "What to write about", type: "string", maxLength: 256 } },
      required: ["topic"],
    });
    const progress = [];
    const res = await client.callTool(
      { name: tools[0].name, arguments: { topic: script.workflow.marker } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    const outputs = { text: script.workflow.chunks.join(""), heading: "# " + script.workflow.marker.toUpperCase() };
    assert.deepEqual(res.structuredContent, outputs);
    assert.equal(res.content.length, 1);
    assert.deepEqual(JSON.parse(res.content[0].text), outputs);
    assert.ok(progress.length >= 1, "a progress notification came before the outputs");
    assert.match(progress[0].message, /finished\.$/);
  } finally {
    await client.close();
  }
});

test("an unknown server code", { timeout: 30_000 }, async () => {
  const url = chatURL.replace(/\/mcp\/server\/[^/]+\/mcp$/, "/mcp/server/not-a-code/mcp");
  await assert.rejects(connect(url), /Server Not Found/);
});

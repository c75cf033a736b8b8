// Runs an Agent app (mode agent) conversation through Dify's official Node SDK (npm
// dify-client's ChatClient, unchanged): the SDK's blocking call is refused, its streaming call
// carries agent_message chunks, one closing message with the whole answer and a message_end
// without retriever_resources. Run by conformance/sdk_test.go (TestDifyNodeSDK) with, besides
// what sdk.test.mjs reads:
//   PARLEY_AGENT_APP_KEY  key of a published Agent app whose form asks for `who`

import assert from "node:assert/strict";
import { ChatClient } from "dify-client";
import { env, UUID, sdkTest, assertUsage, frames, expectAxiosError } from "./helpers.mjs";

const baseUrl = env("PARLEY_URL").replace(/\/+$/, "");
const key = env("PARLEY_AGENT_APP_KEY");
/** @type {{agentapp: {marker: string, chunks: string[]}}} */
const script = JSON.parse(env("PARLEY_SDK_SCRIPT"));
const answer = script.agentapp.chunks.join("");

const app = () => new ChatClient(key, baseUrl);
let users = 0;
const newUser = (what) => `node-sdk-agentapp-${what}-${process.pid}-${++users}`;

sdkTest("agent: the SDK's blocking createChatMessage is refused", async () => {
  await expectAxiosError(app().createChatMessage({ who: "Ada" }, `Hi ${script.agentapp.marker}`, newUser("blocking")), 400, "bad_request");
});

sdkTest("agent: streaming createChatMessage ends with one message and message_end", async () => {
  const c = app();
  const user = newUser("streaming");
  const res = await c.createChatMessage({ who: "Ada" }, `Hi ${script.agentapp.marker}`, user, true);
  assert.equal(res.status, 200);
  assert.match(res.headers["content-type"], /^text\/event-stream/);
  const events = [];
  for await (const f of frames(res.data)) {
    if (!f.ping) events.push(f);
  }
  const kinds = events.map((e) => e.event);
  assert.equal(kinds[0], "agent_thought", `events: ${kinds}`);
  assert.deepEqual(kinds.slice(-2), ["message", "message_end"], `events: ${kinds}`);
  assert.equal(kinds.filter((k) => k === "message").length, 1, `one closing message: ${kinds}`);
  const text = events.filter((e) => e.event === "agent_message").map((e) => e.answer).join("");
  assert.equal(text, answer);
  assert.equal(events.at(-2).answer, answer, "the closing message carries the complete answer");
  const end = events.at(-1);
  assert.match(end.message_id, UUID);
  assertUsage(end.metadata.usage, "message_end");
  assert.ok(!("retriever_resources" in end.metadata), "an Agent app's message_end has no retriever_resources");

  const hist = await c.getConversationMessages(user, end.conversation_id);
  assert.equal(hist.data.data.length, 1);
  assert.equal(hist.data.data[0].answer, answer);
  assert.equal(hist.data.data[0].agent_thoughts.length, 1);
});

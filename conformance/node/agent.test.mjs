// Runs a Legacy Agent (agent-chat) conversation through Dify's official Node SDK (npm
// dify-client's ChatClient, unchanged): the SDK's blocking call is refused, its streaming call
// carries agent_thought steps and agent_message chunks, and the history lists the steps. Run by
// conformance/sdk_test.go (TestDifyNodeSDK) with, besides what sdk.test.mjs reads:
//   PARLEY_AGENT_KEY  key of the `agent` app of conformance/testdata/parley.yaml

import assert from "node:assert/strict";
import { ChatClient } from "dify-client";
import { env, UUID, sdkTest, assertUsage, frames, expectAxiosError } from "./helpers.mjs";

const baseUrl = env("PARLEY_URL").replace(/\/+$/, "");
const agentKey = env("PARLEY_AGENT_KEY");
/** @type {{agent: {marker: string, chunks: string[]}}} */
const script = JSON.parse(env("PARLEY_SDK_SCRIPT"));
const answer = script.agent.chunks.join("");

const agent = () => new ChatClient(agentKey, baseUrl);
let users = 0;
const newUser = (what) => `node-sdk-agent-${what}-${process.pid}-${++users}`;

sdkTest("agent-chat: the SDK's blocking createChatMessage is refused", async () => {
  await expectAxiosError(agent().createChatMessage({}, `Hi ${script.agent.marker}`, newUser("blocking")), 400, "bad_request");
});

sdkTest("agent-chat: streaming createChatMessage and the history's agent_thoughts", async () => {
  const c = agent();
  const user = newUser("streaming");
  const res = await c.createChatMessage({}, `Hi ${script.agent.marker}`, user, true);
  assert.equal(res.status, 200);
  assert.match(res.headers["content-type"], /^text\/event-stream/);
  const events = [];
  for await (const f of frames(res.data)) {
    if (!f.ping) events.push(f);
  }
  const kinds = events.map((e) => e.event);
  assert.equal(kinds.at(-1), "message_end", `events: ${kinds}`);
  assert.equal(kinds[0], "agent_thought", `events: ${kinds}`);
  assert.ok(!kinds.includes("message"), `an agent streams agent_message, not message: ${kinds}`);
  const thoughts = events.filter((e) => e.event === "agent_thought");
  const first = thoughts[0];
  assert.match(first.id, UUID);
  assert.equal(first.position, 1);
  for (const k of ["thought", "tool", "tool_input", "observation"]) assert.equal(first[k], "", `first publication: ${k}`);
  assert.deepEqual(first.message_files, []);
  const last = thoughts.at(-1);
  assert.equal(last.id, first.id, "a step is re-sent under its id");
  assert.equal(last.thought, answer);
  const text = events.filter((e) => e.event === "agent_message").map((e) => e.answer).join("");
  assert.equal(text, answer);
  for (const ev of events) {
    assert.equal(ev.message_id, first.message_id);
    assert.equal(ev.conversation_id, first.conversation_id);
  }
  const end = events.at(-1);
  assertUsage(end.metadata.usage, "message_end");

  const hist = await c.getConversationMessages(user, end.conversation_id);
  assert.equal(hist.data.data.length, 1);
  const m = hist.data.data[0];
  assert.equal(m.answer, answer);
  assert.equal(m.agent_thoughts.length, 1);
  assert.equal(m.agent_thoughts[0].id, first.id);
  assert.equal(m.agent_thoughts[0].message_id, end.message_id);
  assert.equal(m.agent_thoughts[0].thought, answer);
});

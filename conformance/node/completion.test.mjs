// Runs the Completion part of Dify's official Node SDK (npm dify-client's CompletionClient,
// unchanged) against a running Parley: blocking and streaming createCompletionMessage, and the
// mode errors both ways. Run by conformance/sdk_test.go (TestDifyNodeSDK) with, besides what
// sdk.test.mjs reads:
//   PARLEY_COMPLETION_KEY  key of the `writer` Completion app of conformance/testdata/parley.yaml
// The SDK sends no query: the app's prompt, filled from the inputs, is the whole message, so the
// scripted reply's marker travels in the `name` input.

import assert from "node:assert/strict";
import { ChatClient, CompletionClient } from "dify-client";
import { env, UUID, sdkTest, assertUsage, frames, expectAxiosError } from "./helpers.mjs";

const baseUrl = env("PARLEY_URL").replace(/\/+$/, "");
const appKey = env("PARLEY_APP_KEY");
const completionKey = env("PARLEY_COMPLETION_KEY");
/** @type {{complete: {marker: string, chunks: string[]}}} */
const script = JSON.parse(env("PARLEY_SDK_SCRIPT"));
const answer = script.complete.chunks.join("");

const writer = () => new CompletionClient(completionKey, baseUrl);
const inputs = { tone: "warm", name: script.complete.marker };
let users = 0;
const newUser = (what) => `node-sdk-completion-${what}-${process.pid}-${++users}`;

sdkTest("blocking createCompletionMessage", async () => {
  const res = await writer().createCompletionMessage(inputs, newUser("blocking"));
  assert.equal(res.status, 200);
  const r = res.data;
  assert.equal(r.event, "message");
  assert.equal(r.mode, "completion");
  assert.equal(r.answer, answer);
  assert.match(r.message_id, UUID);
  assert.equal(r.id, r.message_id);
  assert.match(r.task_id, UUID);
  assert.ok(!("conversation_id" in r), `a completion reply has no conversation_id: ${JSON.stringify(r)}`);
  assertUsage(r.metadata.usage, "blocking reply");
});

sdkTest("streaming createCompletionMessage", async () => {
  const res = await writer().createCompletionMessage(inputs, newUser("streaming"), true);
  assert.equal(res.status, 200);
  assert.match(res.headers["content-type"], /^text\/event-stream/);
  const events = [];
  for await (const f of frames(res.data)) {
    if (!f.ping) events.push(f);
  }
  const end = events.at(-1);
  assert.equal(end?.event, "message_end", `the stream ends with message_end: ${JSON.stringify(events)}`);
  const chunks = events.slice(0, -1);
  for (const ev of chunks) assert.equal(ev.event, "message", `unexpected event before message_end: ${JSON.stringify(ev)}`);
  assert.ok(chunks.length >= 2, `want the answer in several chunks, got ${chunks.length}`);
  assert.equal(chunks.map((e) => e.answer).join(""), answer);
  for (const ev of events) {
    assert.ok(!("conversation_id" in ev), `${ev.event}: a completion event has no conversation_id`);
    assert.equal(ev.message_id, end.message_id, `${ev.event}: message_id`);
    assert.equal(ev.task_id, end.task_id, `${ev.event}: task_id`);
  }
  assertUsage(end.metadata.usage, "message_end");
});

sdkTest("mode errors: a chat key on the completion route, a completion key on the chat route", async () => {
  await expectAxiosError(new CompletionClient(appKey, baseUrl).createCompletionMessage({ tone: "warm" }, newUser("wrong-app")),
    400, "app_unavailable");
  await expectAxiosError(new ChatClient(completionKey, baseUrl).createChatMessage(inputs, "hello", newUser("wrong-route")),
    400, "not_chat_app");
});

sdkTest("a required input missing", async () => {
  await expectAxiosError(writer().createCompletionMessage({ name: "Ann" }, newUser("missing")), 400, "invalid_param");
});

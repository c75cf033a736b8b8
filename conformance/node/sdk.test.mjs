// Runs Dify's official Node SDK (npm dify-client, pinned in package.json) against a running
// Parley, unchanged: every call goes through the SDK's ChatClient/DifyClient. Operations the SDK
// has no method for (stop, suggested questions, info, meta, annotations) go through its public generic helper
// DifyClient.sendRequest, so they still carry the SDK's own headers and axios handling.
//
// conformance/sdk_test.go (TestDifyNodeSDK) starts the server, scripts the fake upstream model
// and runs this file with:
//   PARLEY_URL         API base, ending in /v1
//   PARLEY_APP_KEY     key of the `chatbot` app of conformance/testdata/parley.yaml
//   PARLEY_SDK_SCRIPT  JSON: what the fake upstream model answers: `stream` and `hang` when their
//                      marker is in the user's message, `title` to every conversation-naming
//                      request, `suggest` to every suggested-questions request (see sdk_test.go).
// Outside that test the fake model's replies are not scripted: run it with
// `go test -run TestDifyNodeSDK ./conformance/`.

import assert from "node:assert/strict";
import { ChatClient, DifyClient } from "dify-client";
import { env, UUID, sdkTest, assertUsage, frames, expectAxiosError } from "./helpers.mjs";

const baseUrl = env("PARLEY_URL").replace(/\/+$/, "");
const appKey = env("PARLEY_APP_KEY");
/** @type {{stream: {marker: string, chunks: string[]}, hang: {marker: string, chunks: string[]},
 *          title: {text: string}, suggest: {questions: string[]}}} */
const script = JSON.parse(env("PARLEY_SDK_SCRIPT"));

// The chatbot app's form has a required select `tone`: every new conversation sends it.
const inputs = { tone: "warm" };
const chat = () => new ChatClient(appKey, baseUrl);
let users = 0;
// A fresh end user per test keeps conversation listings exact.
const newUser = (what) => `node-sdk-${what}-${process.pid}-${++users}`;

// Checks the envelope every chat event carries and that it is the same on all of them.
function checkEnvelope(events) {
  const first = events[0];
  for (const ev of events) {
    assert.match(ev.conversation_id, UUID, `${ev.event}: conversation_id`);
    assert.match(ev.message_id, UUID, `${ev.event}: message_id`);
    assert.match(ev.task_id, UUID, `${ev.event}: task_id`);
    assert.ok(Number.isInteger(ev.created_at) && ev.created_at > 1_600_000_000, `${ev.event}: created_at = ${ev.created_at}`);
    for (const k of ["conversation_id", "message_id", "task_id", "created_at"]) {
      assert.equal(ev[k], first[k], `${ev.event}: ${k} differs from the first event's`);
    }
    if (ev.event === "message" || ev.event === "message_end") {
      assert.equal(ev.id, ev.message_id, `${ev.event}: id is the message id`);
    }
  }
}

// Starts a conversation with a blocking message and returns the reply body.
async function startConversation(c, user, query) {
  const res = await c.createChatMessage(inputs, query, user);
  assert.equal(res.status, 200);
  return res.data;
}

sdkTest("getApplicationParameters (DifyClient and ChatClient)", async () => {
  for (const client of [new DifyClient(appKey, baseUrl), chat()]) {
    const res = await client.getApplicationParameters(newUser("params"));
    assert.equal(res.status, 200);
    const p = res.data;
    assert.equal(p.opening_statement, "Hello from the conformance bot.");
    assert.deepEqual(p.suggested_questions_after_answer, { enabled: true });
    assert.deepEqual(p.user_input_form, [
      { "text-input": { label: "Your name", variable: "name", required: false, max_length: 20, default: "", hide: false } },
      { select: { label: "tone", variable: "tone", required: true, options: ["warm", "dry"], default: "", hide: false } },
    ]);
    for (const k of ["speech_to_text", "text_to_speech", "retriever_resource", "annotation_reply",
      "more_like_this", "sensitive_word_avoidance"]) {
      assert.equal(typeof p[k]?.enabled, "boolean", `${k}.enabled`);
    }
    assert.ok(Array.isArray(p.suggested_questions));
    assert.equal(typeof p.file_upload, "object");
    assert.equal(typeof p.system_parameters.file_size_limit, "number");
  }
});

sdkTest("info and meta (sendRequest: the SDK has no method for them)", async () => {
  const c = chat();
  const info = await c.sendRequest("GET", "/info", null, { user: newUser("info") });
  assert.equal(info.status, 200);
  assert.equal(info.data.name, "chatbot");
  assert.equal(info.data.mode, "chat");
  const meta = await c.sendRequest("GET", "/meta", null, { user: newUser("meta") });
  assert.equal(meta.status, 200);
  assert.deepEqual(meta.data.tool_icons, {});
});

sdkTest("blocking createChatMessage, then continuing the conversation", async () => {
  const c = chat();
  const user = newUser("blocking");
  const res = await c.createChatMessage(inputs, "What can you do?", user, false);
  assert.equal(res.status, 200);
  assert.match(res.headers["content-type"], /^application\/json/);
  const r = res.data;
  assert.equal(r.event, "message");
  assert.equal(r.mode, "chat");
  assert.equal(r.answer, "Echo: What can you do?");
  for (const k of ["id", "message_id", "conversation_id", "task_id"]) assert.match(r[k], UUID, k);
  assert.equal(r.id, r.message_id);
  assert.ok(Number.isInteger(r.created_at) && Math.abs(r.created_at - Date.now() / 1000) < 300, `created_at = ${r.created_at}`);
  assertUsage(r.metadata.usage, "blocking reply");
  assert.deepEqual(r.metadata.retriever_resources, []);

  // Continuing: the SDK adds conversation_id; inputs are the conversation's, whatever is sent.
  const next = await c.createChatMessage({}, "And what else?", user, false, r.conversation_id);
  assert.equal(next.status, 200);
  assert.equal(next.data.conversation_id, r.conversation_id);
  assert.notEqual(next.data.message_id, r.message_id);
  assert.notEqual(next.data.task_id, r.task_id);
  assert.equal(next.data.answer, "Echo: And what else?");

  const list = await c.getConversations(user);
  assert.equal(list.data.data.length, 1);
  assert.equal(list.data.data[0].id, r.conversation_id);
  assert.equal(list.data.data[0].inputs.tone, "warm");
});

sdkTest("streaming createChatMessage", async () => {
  const c = chat();
  const user = newUser("streaming");
  const res = await c.createChatMessage(inputs, `Stream this ${script.stream.marker}`, user, true);
  assert.equal(res.status, 200);
  assert.match(res.headers["content-type"], /^text\/event-stream/);
  const events = [];
  for await (const f of frames(res.data)) {
    if (!f.ping) events.push(f);
  }
  assert.ok(events.length >= 2, `events: ${JSON.stringify(events)}`);
  const end = events.at(-1);
  assert.equal(end.event, "message_end", "the stream ends with message_end");
  const chunks = events.slice(0, -1);
  for (const ev of chunks) assert.equal(ev.event, "message", `unexpected event before message_end: ${JSON.stringify(ev)}`);
  assert.ok(chunks.length >= 2, `want the answer in several chunks, got ${chunks.length}`);
  assert.equal(chunks.map((e) => e.answer).join(""), script.stream.chunks.join(""));
  checkEnvelope(events);
  assertUsage(end.metadata.usage, "message_end");

  // The streamed message is in the history like a blocking one.
  const hist = await c.getConversationMessages(user, end.conversation_id);
  assert.equal(hist.data.data.length, 1);
  assert.equal(hist.data.data[0].id, end.message_id);
  assert.equal(hist.data.data[0].answer, script.stream.chunks.join(""));
  assert.equal(hist.data.data[0].status, "normal");
});

sdkTest("getConversations, with the first_id and pinned the SDK sends", async () => {
  const c = chat();
  const user = newUser("conversations");
  const a = await startConversation(c, user, "first conversation");
  const b = await startConversation(c, user, "second conversation");

  // Defaults: the SDK's null first_id/limit/pinned are left out by axios.
  const all = await c.getConversations(user);
  assert.equal(all.status, 200);
  assert.equal(all.data.has_more, false);
  assert.equal(all.data.limit, 20);
  assert.deepEqual(all.data.data.map((x) => x.id).sort(), [a.conversation_id, b.conversation_id].sort());
  for (const conv of all.data.data) {
    assert.equal(conv.status, "normal");
    assert.equal(conv.introduction, "Hello from the conformance bot.");
    assert.equal(conv.inputs.tone, "warm");
    assert.equal(typeof conv.name, "string");
    assert.ok(Number.isInteger(conv.created_at) && Number.isInteger(conv.updated_at));
  }

  // With every argument set: first_id and pinned are not Dify parameters of this operation
  // (it pages with last_id), so the server ignores them; limit applies.
  const page = await c.getConversations(user, a.conversation_id, 1, false);
  assert.equal(page.status, 200);
  assert.equal(page.data.limit, 1);
  assert.equal(page.data.has_more, true);
  assert.equal(page.data.data.length, 1);
  const pinned = await c.getConversations(user, null, null, true);
  assert.equal(pinned.data.data.length, 2);

  // Another end user sees none of them.
  const other = await c.getConversations(newUser("stranger"));
  assert.deepEqual(other.data.data, []);
});

sdkTest("getConversationMessages, with first_id and limit", async () => {
  const c = chat();
  const user = newUser("messages");
  const first = await startConversation(c, user, "message one");
  const second = (await c.createChatMessage(inputs, "message two", user, false, first.conversation_id)).data;

  const res = await c.getConversationMessages(user, first.conversation_id);
  assert.equal(res.status, 200);
  const page = res.data;
  assert.equal(page.has_more, false);
  assert.deepEqual(page.data.map((m) => m.id), [first.message_id, second.message_id], "oldest to newest");
  assert.deepEqual(page.data.map((m) => m.query), ["message one", "message two"]);
  assert.deepEqual(page.data.map((m) => m.answer), ["Echo: message one", "Echo: message two"]);
  for (const m of page.data) {
    assert.equal(m.conversation_id, first.conversation_id);
    assert.equal(m.status, "normal");
    assert.equal(m.feedback, null);
    assert.equal(m.inputs.tone, "warm");
    assert.deepEqual(m.message_files, []);
    assert.deepEqual(m.retriever_resources, []);
    assert.deepEqual(m.agent_thoughts, []);
  }

  const newest = await c.getConversationMessages(user, first.conversation_id, null, 1);
  assert.equal(newest.data.has_more, true);
  assert.deepEqual(newest.data.data.map((m) => m.id), [second.message_id]);
  const older = await c.getConversationMessages(user, first.conversation_id, second.message_id, 10);
  assert.equal(older.data.has_more, false);
  assert.deepEqual(older.data.data.map((m) => m.id), [first.message_id]);

  // Someone else's conversation does not exist for this user.
  await expectAxiosError(c.getConversationMessages(newUser("stranger"), first.conversation_id), 404, "not_found");
});

sdkTest("renameConversation: automatic name, explicit name, auto_generate", async () => {
  const c = chat();
  const user = newUser("rename");
  const r = await startConversation(c, user, "Name me");

  // The SDK does not send auto_generate_name, so the server names the conversation after its
  // first answer, in the background: wait for it before renaming, or the two race.
  let name;
  for (let i = 0; i < 100; i++) {
    name = (await c.getConversations(user)).data.data[0].name;
    if (name === script.title.text) break;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  assert.equal(name, script.title.text, "the conversation was not named after its first message");

  const explicit = await c.renameConversation(r.conversation_id, "Named by the Node SDK", user);
  assert.equal(explicit.status, 200);
  assert.equal(explicit.data.id, r.conversation_id);
  assert.equal(explicit.data.name, "Named by the Node SDK");
  assert.equal(explicit.data.inputs.tone, "warm");
  assert.equal((await c.getConversations(user)).data.data[0].name, "Named by the Node SDK");

  const auto = await c.renameConversation(r.conversation_id, null, user, true);
  assert.equal(auto.status, 200);
  assert.equal(auto.data.name, script.title.text);

  await expectAxiosError(c.renameConversation(r.conversation_id, "x", newUser("stranger")), 404, "not_found");
});

sdkTest("messageFeedback: like, then revoke", async () => {
  const c = chat();
  const user = newUser("feedback");
  const r = await startConversation(c, user, "Rate this");

  const like = await c.messageFeedback(r.message_id, "like", user);
  assert.equal(like.status, 200);
  assert.deepEqual(like.data, { result: "success" });
  let hist = await c.getConversationMessages(user, r.conversation_id);
  assert.deepEqual(hist.data.data[0].feedback, { rating: "like" });

  const dislike = await c.messageFeedback(r.message_id, "dislike", user);
  assert.deepEqual(dislike.data, { result: "success" });
  hist = await c.getConversationMessages(user, r.conversation_id);
  assert.deepEqual(hist.data.data[0].feedback, { rating: "dislike" });

  const revoke = await c.messageFeedback(r.message_id, null, user);
  assert.deepEqual(revoke.data, { result: "success" });
  hist = await c.getConversationMessages(user, r.conversation_id);
  assert.equal(hist.data.data[0].feedback, null);

  await expectAxiosError(c.messageFeedback("00000000-0000-4000-8000-000000000000", "like", user), 404, "not_found");
});

sdkTest("suggested questions (sendRequest: the SDK 2.3.2 has no method for them)", async () => {
  const c = chat();
  const user = newUser("suggested");
  const r = await startConversation(c, user, "Suggest follow-ups");
  const res = await c.sendRequest("GET", `/messages/${r.message_id}/suggested`, null, { user });
  assert.equal(res.status, 200);
  assert.deepEqual(res.data, { result: "success", data: script.suggest.questions });
});

sdkTest("fileUpload with a native FormData, then the file in a message", async () => {
  const c = chat();
  const user = newUser("upload");
  const content = "Notes uploaded through the Dify Node SDK.\n";
  const form = new FormData();
  form.append("file", new Blob([content], { type: "text/plain" }), "sdk-notes.txt");
  form.append("user", user);
  const res = await c.fileUpload(form);
  assert.equal(res.status, 201, `upload answered ${res.status}: ${JSON.stringify(res.data)}`);
  const f = res.data;
  assert.match(f.id, UUID);
  assert.equal(f.name, "sdk-notes.txt");
  assert.equal(f.size, Buffer.byteLength(content));
  assert.equal(f.extension, "txt");
  assert.match(f.mime_type, /^text\/plain/);
  assert.equal(typeof f.created_by, "string");
  assert.ok(Number.isInteger(f.created_at));

  const files = [{ type: "document", transfer_method: "local_file", upload_file_id: f.id }];
  const msg = await c.createChatMessage(inputs, "What is in the file?", user, false, null, files);
  assert.equal(msg.status, 200);
  assert.equal(msg.data.event, "message");
  assert.match(msg.data.message_id, UUID);

  // The history shows the file on the user's message.
  const hist = await c.getConversationMessages(user, msg.data.conversation_id);
  const mf = hist.data.data[0].message_files;
  assert.equal(mf.length, 1, `message_files: ${JSON.stringify(mf)}`);
  assert.equal(mf[0].upload_file_id, f.id);
  assert.equal(mf[0].transfer_method, "local_file");
  assert.equal(mf[0].belongs_to, "user");
});

sdkTest("deleteConversation", async () => {
  const c = chat();
  const user = newUser("delete");
  const keep = await startConversation(c, user, "keep me");
  const gone = await startConversation(c, user, "delete me");

  const res = await c.deleteConversation(gone.conversation_id, user);
  assert.equal(res.status, 204);
  assert.equal(res.data, "");

  const list = await c.getConversations(user);
  assert.deepEqual(list.data.data.map((x) => x.id), [keep.conversation_id]);
  await expectAxiosError(c.getConversationMessages(user, gone.conversation_id), 404, "not_found");
  await expectAxiosError(c.createChatMessage(inputs, "still there?", user, false, gone.conversation_id), 404, "not_found");
  await expectAxiosError(c.deleteConversation(gone.conversation_id, user), 404, "not_found");
});

sdkTest("stopping a streaming message", async () => {
  const c = chat();
  const user = newUser("stop");
  // The fake model sends the first chunk of this reply, then hangs until the request goes away.
  const res = await c.createChatMessage(inputs, `Hang on ${script.hang.marker}`, user, true);
  assert.equal(res.status, 200);
  const it = frames(res.data)[Symbol.asyncIterator]();
  const events = [];
  try {
    for (;;) {
      const { value, done } = await it.next();
      assert.ok(!done, `the stream ended before the first chunk: ${JSON.stringify(events)}`);
      if (value.ping) continue;
      events.push(value);
      if (value.event === "message") break;
    }
    const taskId = events[0].task_id;
    assert.match(taskId, UUID);

    // The SDK 2.3.2 has no stop method: call the endpoint through its generic sendRequest, which
    // uses the same axios call, headers and key as its own methods.
    const stop = await c.sendRequest("POST", `/chat-messages/${taskId}/stop`, { user });
    assert.equal(stop.status, 200);
    assert.deepEqual(stop.data, { result: "success" });

    for (;;) {
      const { value, done } = await it.next();
      if (done) break;
      if (!value.ping) events.push(value);
    }
  } finally {
    res.data.destroy();
  }
  const end = events.at(-1);
  assert.equal(end.event, "message_end", `a stopped stream ends with message_end: ${JSON.stringify(events)}`);
  for (const ev of events.slice(0, -1)) assert.equal(ev.event, "message");
  checkEnvelope(events);
  assertUsage(end.metadata.usage, "message_end after stop");
  const partial = events.slice(0, -1).map((e) => e.answer).join("");
  assert.equal(partial, script.hang.chunks[0]);

  const hist = await c.getConversationMessages(user, end.conversation_id);
  assert.equal(hist.data.data[0].status, "stopped");
  assert.equal(hist.data.data[0].answer, partial);
});

sdkTest("a bad key is a 401 unauthorized axios error", async () => {
  const bad = new ChatClient("app-NotAKeyOfThisServer0000", baseUrl);
  await expectAxiosError(bad.getApplicationParameters(newUser("badkey")), 401, "unauthorized");
  await expectAxiosError(bad.createChatMessage(inputs, "hello", newUser("badkey")), 401, "unauthorized");
  await expectAxiosError(bad.getConversations(newUser("badkey")), 401, "unauthorized");
});

sdkTest("annotations (sendRequest: the SDK 2.3.2 has no method for them)", async () => {
  const c = new DifyClient(appKey, baseUrl);
  const tag = `node-sdk-annotation-${process.pid}`;
  const created = await c.sendRequest("POST", "/apps/annotations", { question: `What is ${tag}?`, answer: "A test." });
  assert.equal(created.status, 201);
  assert.match(created.data.id, UUID);
  assert.equal(created.data.hit_count, 0);
  assert.ok(Number.isInteger(created.data.created_at));

  const list = await c.sendRequest("GET", "/apps/annotations", null, { page: 1, limit: 20, keyword: tag.toUpperCase() });
  assert.equal(list.status, 200);
  assert.equal(list.data.total, 1);
  assert.equal(list.data.has_more, false);
  assert.equal(list.data.data[0].id, created.data.id);

  const updated = await c.sendRequest("PUT", `/apps/annotations/${created.data.id}`, { question: `What is ${tag}?`, answer: "Still a test." });
  assert.equal(updated.status, 200);
  assert.equal(updated.data.answer, "Still a test.");

  const deleted = await c.sendRequest("DELETE", `/apps/annotations/${created.data.id}`);
  assert.equal(deleted.status, 204);
  await expectAxiosError(c.sendRequest("DELETE", `/apps/annotations/${created.data.id}`), 404, "not_found");
  await expectAxiosError(c.sendRequest("GET", "/apps/annotation-reply/enable/status/no-such-job"), 400, "invalid_param");
});

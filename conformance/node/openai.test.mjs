// Runs OpenAI's official Node SDK (npm openai) and the Vercel AI SDK's OpenAI-compatible
// provider (npm ai, @ai-sdk/openai-compatible), unchanged, against Parley's OpenAI-compatible
// operations: the model list, blocking and streaming chat completions with usage, a multi-turn
// exchange, a stored conversation continued, the Agent, Completion and Workflow apps, and the
// errors as the SDK raises them. Run by conformance/sdk_test.go (TestDifyNodeSDK), with the keys
// and the scripted replies the other suites read.

import assert from "node:assert/strict";
import { test } from "node:test";
import OpenAI from "openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, streamText } from "ai";
import { env, UUID } from "./helpers.mjs";

const baseURL = env("PARLEY_URL").replace(/\/+$/, "");
const script = JSON.parse(env("PARLEY_SDK_SCRIPT"));
const answer = (name) => script[name].chunks.join("");

const client = (key = env("PARLEY_APP_KEY")) => new OpenAI({ apiKey: key, baseURL, maxRetries: 0, timeout: 30_000 });
// The Chatbot app of conformance/testdata/parley.yaml has a required tone input.
const chatbot = { inputs: { tone: "warm" } };
let users = 0;
const newUser = (what) => `openai-sdk-${what}-${process.pid}-${++users}`;

const openaiTest = (name, fn) => test(name, { timeout: 30_000 }, fn);

function assertUsage(usage, where) {
  assert.equal(typeof usage, "object", `${where}: usage missing`);
  for (const k of ["prompt_tokens", "completion_tokens", "total_tokens"]) {
    assert.ok(Number.isInteger(usage[k]) && usage[k] >= 0, `${where}: usage.${k} = ${usage[k]}`);
  }
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, `${where}: total_tokens`);
}

openaiTest("models.list and models.retrieve", async () => {
  const c = client();
  const list = [];
  for await (const m of c.models.list()) list.push(m);
  assert.equal(list.length, 1, JSON.stringify(list));
  assert.equal(list[0].object, "model");
  assert.equal(typeof list[0].id, "string");
  assert.equal(typeof list[0].owned_by, "string");
  const one = await c.models.retrieve(list[0].id);
  assert.equal(one.id, list[0].id);
  await assert.rejects(c.models.retrieve("no-such-app"), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError, `${err}`);
    assert.equal(err.status, 404);
    assert.equal(err.code, "model_not_found");
    assert.equal(err.param, "model");
    return true;
  });
});

openaiTest("blocking chat completion", async () => {
  const res = await client().chat.completions.create({
    model: "anything", messages: [{ role: "user", content: `Stream this ${script.stream.marker}` }],
    user: newUser("blocking"), ...chatbot,
  });
  assert.equal(res.object, "chat.completion");
  assert.match(res.id, /^chatcmpl-/);
  assert.match(res.id.slice("chatcmpl-".length), UUID);
  assert.equal(res.model, "anything");
  assert.equal(res.choices.length, 1);
  assert.equal(res.choices[0].message.role, "assistant");
  assert.equal(res.choices[0].message.content, answer("stream"));
  assert.equal(res.choices[0].finish_reason, "stop");
  assertUsage(res.usage, "blocking");
  assert.match(res.conversation_id, UUID);
});

openaiTest("streaming chat completion with usage", async () => {
  const stream = await client().chat.completions.create({
    model: "chatbot", messages: [{ role: "user", content: `Stream this ${script.stream.marker}` }],
    stream: true, stream_options: { include_usage: true }, user: newUser("stream"), ...chatbot,
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.equal(chunks[0].choices[0].delta.role, "assistant");
  const content = chunks.map((ch) => ch.choices[0]?.delta?.content ?? "").join("");
  assert.equal(content, answer("stream"));
  const ids = new Set(chunks.map((ch) => ch.id));
  assert.equal(ids.size, 1, `one id for every chunk: ${[...ids]}`);
  for (const ch of chunks) assert.equal(ch.object, "chat.completion.chunk");
  const finish = chunks.filter((ch) => ch.choices[0]?.finish_reason);
  assert.equal(finish.length, 1);
  assert.equal(finish[0].choices[0].finish_reason, "stop");
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assertUsage(last.usage, "usage chunk");
  assert.ok(last.usage.completion_tokens > 0);
});

openaiTest("the stream helper and finalChatCompletion", async () => {
  const runner = client().chat.completions.stream({
    model: "chatbot", messages: [{ role: "user", content: `Stream this ${script.stream.marker}` }],
    user: newUser("helper"), ...chatbot,
  });
  let deltas = "";
  runner.on("content", (delta) => { deltas += delta; });
  const done = await runner.finalChatCompletion();
  assert.equal(deltas, answer("stream"));
  assert.equal(done.choices[0].message.content, answer("stream"));
});

openaiTest("a multi-turn exchange, then the stored conversation continued", async () => {
  const c = client();
  const user = newUser("turns");
  const res = await c.chat.completions.create({
    model: "chatbot", user, ...chatbot,
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hello" },
      { role: "assistant", content: "Hi!" },
      { role: "user", content: [{ type: "text", text: `Stream this ${script.stream.marker}` }] },
    ],
  });
  assert.equal(res.choices[0].message.content, answer("stream"));
  // conversation_id (Parley's extension) continues the stored conversation.
  const next = await c.chat.completions.create({
    model: "chatbot", user, conversation_id: res.conversation_id,
    messages: [{ role: "user", content: `Again ${script.stream.marker}` }],
  });
  assert.equal(next.conversation_id, res.conversation_id);
  assert.equal(next.choices[0].message.content, answer("stream"));
});

openaiTest("Legacy Agent, Agent, Completion and Workflow apps", async () => {
  const agent = await client(env("PARLEY_AGENT_KEY")).chat.completions.create({
    model: "agent", messages: [{ role: "user", content: `Go ${script.agent.marker}` }], user: newUser("agent"),
  });
  assert.equal(agent.choices[0].message.content, answer("agent"));

  const stream = await client(env("PARLEY_AGENT_APP_KEY")).chat.completions.create({
    model: "agent-app", messages: [{ role: "user", content: `Go ${script.agentapp.marker}` }], user: newUser("agentapp"), stream: true,
    inputs: { who: "Ada" },
  });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  assert.equal(text, answer("agentapp"));

  const completion = await client(env("PARLEY_COMPLETION_KEY")).chat.completions.create({
    model: "writer", messages: [{ role: "user", content: `For ${script.complete.marker}` }], user: newUser("completion"),
    inputs: { tone: "warm", name: script.complete.marker },
  });
  assert.equal(completion.choices[0].message.content, answer("complete"));
  assert.equal(completion.conversation_id, null);

  // A Workflow app's answer is its outputs as JSON when it has neither an answer output nor
  // exactly one.
  const workflow = await client(env("PARLEY_WORKFLOW_KEY")).chat.completions.create({
    model: "topic-writer", messages: [{ role: "user", content: "write" }], user: newUser("workflow"),
    inputs: { topic: script.workflow.marker },
  });
  assert.deepEqual(JSON.parse(workflow.choices[0].message.content), {
    heading: "# " + script.workflow.marker.toUpperCase(), text: answer("workflow"),
  });
  assert.equal(workflow.choices[0].finish_reason, "stop");
  assertUsage(workflow.usage, "workflow");
});

openaiTest("errors as the SDK raises them", async () => {
  await assert.rejects(client("app-not-a-real-key").chat.completions.create({
    model: "x", messages: [{ role: "user", content: "hi" }],
  }), (err) => {
    assert.ok(err instanceof OpenAI.AuthenticationError, `${err}`);
    assert.equal(err.status, 401);
    assert.equal(err.code, "invalid_api_key");
    assert.equal(err.type, "authentication_error");
    return true;
  });
  await assert.rejects(client().chat.completions.create({
    model: "x", messages: [{ role: "assistant", content: "no question" }], ...chatbot,
  }), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError, `${err}`);
    assert.equal(err.code, "invalid_param");
    assert.equal(err.param, "messages");
    assert.equal(err.type, "invalid_request_error");
    return true;
  });
  await assert.rejects(client().chat.completions.create({ model: "x", messages: [] }), OpenAI.BadRequestError);
  await assert.rejects(client().chat.completions.create({
    model: "x", n: 2, messages: [{ role: "user", content: "hi" }], ...chatbot,
  }), (err) => err instanceof OpenAI.BadRequestError && err.param === "n");
  await assert.rejects(client().chat.completions.create({
    model: "x", messages: [{ role: "user", content: "hi" }], conversation_id: "00000000-0000-4000-8000-000000000000", ...chatbot,
  }), (err) => err instanceof OpenAI.NotFoundError && err.code === "not_found");
});

openaiTest("Responses API: create, stream, and previous_response_id", async () => {
  const c = client();
  const user = newUser("responses");
  const res = await c.responses.create({
    model: "chatbot", input: `Stream this ${script.stream.marker}`, instructions: "Be brief.", user, ...chatbot,
  });
  assert.equal(res.object, "response");
  assert.match(res.id, /^resp_/);
  assert.equal(res.status, "completed");
  assert.equal(res.output_text, answer("stream"));
  assert.equal(res.output[0].role, "assistant");
  assert.ok(res.usage.output_tokens > 0, JSON.stringify(res.usage));

  // The stream, as the SDK's helper accumulates it, and as raw events.
  const stream = c.responses.stream({ model: "chatbot", input: `Stream this ${script.stream.marker}`, user, ...chatbot });
  let deltas = "";
  stream.on("response.output_text.delta", (ev) => { deltas += ev.delta; });
  const final = await stream.finalResponse();
  assert.equal(deltas, answer("stream"));
  assert.equal(final.output_text, answer("stream"));
  assert.equal(final.status, "completed");

  const events = [];
  for await (const ev of await c.responses.create({ model: "chatbot", input: `Stream this ${script.stream.marker}`, user, stream: true, ...chatbot })) {
    events.push(ev);
  }
  const types = events.map((ev) => ev.type);
  assert.deepEqual(types.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
  assert.deepEqual(types.slice(-4), ["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
  assert.deepEqual(events.map((ev) => ev.sequence_number), events.map((_, i) => i));

  // A list of messages, continuing the first answer's conversation.
  const next = await c.responses.create({
    model: "chatbot", user, previous_response_id: res.id,
    input: [{ role: "user", content: [{ type: "input_text", text: `Again ${script.stream.marker}` }] }],
  });
  assert.equal(next.output_text, answer("stream"));
  assert.equal(next.conversation_id, res.conversation_id);
  await assert.rejects(c.responses.create({ model: "chatbot", user: newUser("stranger"), previous_response_id: res.id, input: "hi" }),
    (err) => err instanceof OpenAI.NotFoundError && err.param === "previous_response_id");
});

const provider = () => createOpenAICompatible({ name: "parley", baseURL, apiKey: env("PARLEY_APP_KEY"), includeUsage: true });

openaiTest("Vercel AI SDK: generateText and streamText", async () => {
  const gen = await generateText({
    model: provider().chatModel("chatbot"), prompt: `Stream this ${script.stream.marker}`,
    providerOptions: { parley: { user: newUser("ai-sdk"), inputs: { tone: "warm" } } },
  });
  assert.equal(gen.text, answer("stream"));
  assert.equal(gen.finishReason, "stop");
  assert.ok(gen.usage.outputTokens > 0, JSON.stringify(gen.usage));

  const streamed = streamText({
    model: provider().chatModel("chatbot"), prompt: `Stream this ${script.stream.marker}`,
    providerOptions: { parley: { user: newUser("ai-sdk-stream"), inputs: { tone: "warm" } } },
  });
  let text = "";
  for await (const part of streamed.textStream) text += part;
  assert.equal(text, answer("stream"));
  assert.equal(await streamed.finishReason, "stop");
  assert.ok((await streamed.usage).outputTokens > 0);
});

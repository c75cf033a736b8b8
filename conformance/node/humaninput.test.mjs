// Streams a Chatflow run that pauses at a human-input form through Dify's official Node SDK
// (npm dify-client's ChatClient, unchanged): human_input_required then workflow_paused end the
// stream, without message_end. The SDK has no call for forms or the events of a resumed run, so
// the form and events operations are driven over raw HTTP (fetch) with the token from the
// stream. Run by conformance/sdk_test.go (TestDifyNodeSDK) with, besides what sdk.test.mjs reads:
//   PARLEY_HUMAN_INPUT_KEY  key of a published Chatflow that asks a reviewer (docs/examples/chatflow-review.yml)

import assert from "node:assert/strict";
import { ChatClient } from "dify-client";
import { env, UUID, sdkTest, frames } from "./helpers.mjs";

const baseUrl = env("PARLEY_URL").replace(/\/+$/, "");
const key = env("PARLEY_HUMAN_INPUT_KEY");
const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };

async function events(body) {
  const out = [];
  for await (const f of frames(body)) {
    if (!f.ping) out.push(f);
  }
  return out;
}

sdkTest("human input: a paused Chatflow resumes through the form and events operations", async () => {
  const user = `node-sdk-human-${process.pid}`;
  const res = await new ChatClient(key, baseUrl).createChatMessage({}, "the SDK post", user, true);
  assert.equal(res.status, 200);
  const paused = await events(res.data);
  const kinds = paused.map((e) => e.event);
  assert.deepEqual(kinds.slice(-2), ["human_input_required", "workflow_paused"], `events: ${kinds}`);
  assert.ok(!kinds.includes("message_end"), `a paused run has no message_end: ${kinds}`);
  const required = paused.at(-2);
  const token = required.data.form_token;
  const runID = required.workflow_run_id;
  assert.match(token, /^[A-Za-z0-9]{22}$/);
  assert.match(runID, UUID);
  assert.equal(paused.at(-1).data.reasons[0].TYPE, "human_input_required");

  const form = await fetch(`${baseUrl}/form/human_input/${token}`, { headers });
  assert.equal(form.status, 200);
  const view = await form.json();
  assert.deepEqual(view.user_actions.map((a) => a.id), ["approve", "reject"]);

  const submit = await fetch(`${baseUrl}/form/human_input/${token}`, {
    method: "POST", headers, body: JSON.stringify({ inputs: { comment: "via node" }, action: "approve", user }),
  });
  assert.equal(submit.status, 200);
  assert.deepEqual(await submit.json(), {});

  const stream = await fetch(`${baseUrl}/workflow/${runID}/events?user=${encodeURIComponent(user)}`, { headers });
  assert.equal(stream.status, 200);
  assert.match(stream.headers.get("content-type"), /^text\/event-stream/);
  const resumed = await events(stream.body);
  const rk = resumed.map((e) => e.event);
  assert.ok(rk.includes("human_input_form_filled"), `events: ${rk}`);
  assert.deepEqual(rk.slice(-2), ["message_end", "workflow_finished"], `events: ${rk}`);
  assert.equal(resumed.at(-1).data.status, "succeeded");
  const answer = resumed.filter((e) => e.event === "message").map((e) => e.answer).join("");
  assert.equal(answer, "Approved: via node");

  const again = await fetch(`${baseUrl}/form/human_input/${token}`, {
    method: "POST", headers, body: JSON.stringify({ inputs: { comment: "again" }, action: "approve", user }),
  });
  assert.equal(again.status, 412);
  assert.equal((await again.json()).code, "human_input_form_submitted");
});

// Runs the Workflow part of Dify's official Node SDK (npm dify-client's runWorkflow, unchanged)
// against a running Parley: a Workflow app run blocking and streaming, its run read back, and the
// mode error on a chat app. Run by conformance/sdk_test.go (TestDifyNodeSDK) with, besides what
// sdk.test.mjs reads:
//   PARLEY_WORKFLOW_KEY  key of the published example Workflow app (docs/examples/workflow-basic.yml)
// The scripted reply's marker travels in the `topic` input, which the app's LLM is given.

import assert from "node:assert/strict";
import { CompletionClient } from "dify-client";
import { env, UUID, sdkTest, frames, expectAxiosError } from "./helpers.mjs";

const baseUrl = env("PARLEY_URL").replace(/\/+$/, "");
const appKey = env("PARLEY_APP_KEY");
const workflowKey = env("PARLEY_WORKFLOW_KEY");
/** @type {{workflow: {marker: string, chunks: string[]}}} */
const script = JSON.parse(env("PARLEY_SDK_SCRIPT"));
const text = script.workflow.chunks.join("");
const heading = "# " + script.workflow.marker.toUpperCase();

// dify-client 2.3.2 has runWorkflow on its CompletionClient only.
const workflows = () => new CompletionClient(workflowKey, baseUrl);
const inputs = { topic: script.workflow.marker };
let users = 0;
const newUser = (what) => `node-sdk-workflow-${what}-${process.pid}-${++users}`;

sdkTest("blocking runWorkflow", async () => {
  const res = await workflows().runWorkflow(inputs, newUser("blocking"));
  assert.equal(res.status, 200);
  const r = res.data;
  assert.match(r.task_id, UUID);
  assert.match(r.workflow_run_id, UUID);
  assert.equal(r.data.id, r.workflow_run_id);
  assert.equal(r.data.status, "succeeded");
  assert.equal(r.data.error, null);
  assert.deepEqual(r.data.outputs, { text, heading });
  assert.equal(r.data.total_steps, 4);

  // The run reads back through the run-detail operation (no SDK method in this version).
  const got = await fetch(`${baseUrl}/workflows/run/${r.workflow_run_id}`, { headers: { Authorization: `Bearer ${workflowKey}` } });
  assert.equal(got.status, 200);
  const run = await got.json();
  assert.equal(run.status, "succeeded");
  assert.equal(JSON.parse(run.inputs).topic, inputs.topic);
  assert.deepEqual(run.outputs, { text, heading });
});

sdkTest("streaming runWorkflow", async () => {
  const res = await workflows().runWorkflow(inputs, newUser("streaming"), true);
  assert.equal(res.status, 200);
  assert.match(res.headers["content-type"], /^text\/event-stream/);
  const events = [];
  let pings = 0;
  for await (const f of frames(res.data)) {
    if (f.ping) pings++;
    else events.push(f);
  }
  assert.ok(pings >= 1, "the stream opens with a ping");
  assert.equal(events[0].event, "workflow_started");
  const end = events.at(-1);
  assert.equal(end.event, "workflow_finished", `the stream ends with workflow_finished: ${JSON.stringify(events.map((e) => e.event))}`);
  assert.equal(end.data.status, "succeeded");
  assert.deepEqual(end.data.outputs, { text, heading });
  const streamed = events.filter((e) => e.event === "text_chunk").map((e) => e.data.text).join("");
  assert.equal(streamed, `${text}\n${heading}`);
  for (const ev of events) {
    assert.equal(ev.workflow_run_id, end.workflow_run_id, `${ev.event}: workflow_run_id`);
    assert.equal(ev.task_id, end.task_id, `${ev.event}: task_id`);
    assert.ok(!("conversation_id" in ev) && !("message_id" in ev), `${ev.event}: a Workflow app's event has no conversation or message`);
  }
});

sdkTest("mode error: a chat app's key on the workflow route", async () => {
  await expectAxiosError(new CompletionClient(appKey, baseUrl).runWorkflow(inputs, newUser("wrong-app")), 400, "not_workflow_app");
});

sdkTest("a required input missing", async () => {
  await expectAxiosError(workflows().runWorkflow({}, newUser("missing")), 400, "invalid_param");
});

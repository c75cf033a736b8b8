// Helpers shared by the Node SDK suites (*.test.mjs): the environment sdk_test.go passes, a test
// wrapper, Dify's stream framing and the checks every suite makes.

import { test } from "node:test";
import assert from "node:assert/strict";

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set; run this through go test -run TestDifyNodeSDK ./conformance/`);
  return v;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// sdkTest is test() with a timeout, and with an SDK call that failed unexpectedly reported as the
// request and the server's answer rather than axios's whole request dump.
export function sdkTest(name, fn) {
  test(name, { timeout: 30_000 }, async () => {
    try {
      await fn();
    } catch (err) {
      if (!err?.isAxiosError) throw err;
      const body = err.response?.data;
      const shown = typeof body?.pipe === "function" ? "(stream)" : JSON.stringify(body);
      throw new Error(`${err.config?.method?.toUpperCase()} ${err.config?.url}: ` +
        (err.response ? `HTTP ${err.response.status} ${shown}` : err.message), { cause: err.code });
    }
  });
}

export function assertUsage(usage, where) {
  assert.equal(typeof usage, "object", `${where}: metadata.usage missing`);
  for (const k of ["prompt_tokens", "completion_tokens", "total_tokens"]) {
    assert.ok(Number.isInteger(usage[k]) && usage[k] >= 0, `${where}: usage.${k} = ${usage[k]}`);
  }
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens, `${where}: total_tokens`);
  for (const k of ["prompt_unit_price", "prompt_price_unit", "prompt_price", "completion_unit_price",
    "completion_price_unit", "completion_price", "total_price"]) {
    assert.match(usage[k], /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/, `${where}: usage.${k} is no decimal string`);
  }
  assert.equal(typeof usage.currency, "string", `${where}: usage.currency`);
  assert.equal(typeof usage.latency, "number", `${where}: usage.latency`);
}

// one `data: <compact JSON>` line or the bare keep-alive `event: ping`, and frames are separated
// by a blank line. Yields {ping: true} for a keep-alive, else the parsed event.
export async function* frames(body) {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (frame === "event: ping") {
        yield { ping: true };
        continue;
      }
      assert.ok(frame.startsWith("data: ") && !frame.includes("\n"),
        `not a Dify frame (want "data: {json}" or "event: ping"): ${JSON.stringify(frame)}`);
      let ev;
      try {
        ev = JSON.parse(frame.slice("data: ".length));
      } catch (e) {
        assert.fail(`data frame is not JSON: ${JSON.stringify(frame)}: ${e.message}`);
      }
      yield ev;
    }
  }
  buf += decoder.decode();
  assert.equal(buf, "", "the stream ended in the middle of a frame");
}

export async function expectAxiosError(promise, status, code) {
  await assert.rejects(promise, (err) => {
    assert.ok(err.isAxiosError, `not an axios error: ${err}`);
    assert.equal(err.response?.status, status, `status; body ${JSON.stringify(err.response?.data)}`);
    assert.equal(err.response.data.code, code);
    assert.equal(err.response.data.status, status);
    assert.equal(typeof err.response.data.message, "string");
    return true;
  });
}


// The page's client of the Service API: a passport from the site code (kept in localStorage per
// code, and sent back so the browser stays the same end user), then the /v1 operations with it
// as bearer token. No app key ever reaches the browser.
// The API's base, beside the page's own path (/{prefix}/chat/{code} → /{prefix}/v1), so a
// server behind a path prefix works too.
const base = location.pathname.replace(/\/(chat|chatbot|completion|workflow)\/[^/]*$/, "") + "/v1";

export class APIError extends Error {
  constructor(status, code, message) {
    super(message || code || "HTTP " + status);
    this.status = status;
    this.code = code;
  }
}

export class Client {
  constructor(code) {
    this.code = code;
    this.key = "parley.passport." + code;
    this.passcode = sessionStorage.getItem("parley.passcode." + code) || "";
    try {
      this.passport = JSON.parse(localStorage.getItem(this.key) || "null");
    } catch {
      this.passport = null;
    }
  }

  get user() {
    return this.passport ? this.passport.end_user_id : "";
  }

  // login gets a passport: the stored one is sent back so the end user stays the same. It throws
  // an APIError with code passcode_required when the site needs a passcode.
  async login(passcode) {
    if (passcode !== undefined) this.passcode = passcode;
    const headers = { "X-App-Code": this.code };
    if (this.passcode) headers["X-Site-Passcode"] = this.passcode;
    if (this.passport && this.passport.access_token) headers.Authorization = "Bearer " + this.passport.access_token;
    const resp = await fetch(base + "/passport", { headers, credentials: "omit" });
    if (!resp.ok) throw await errorOf(resp);
    const p = await resp.json();
    this.passport = { access_token: p.access_token, end_user_id: p.end_user_id };
    localStorage.setItem(this.key, JSON.stringify(this.passport));
    if (this.passcode) sessionStorage.setItem("parley.passcode." + this.code, this.passcode);
    return this.passport;
  }

  // fetch calls an operation with the passport; an expired one is renewed once.
  async fetch(path, init = {}, retried = false) {
    if (!this.passport) await this.login();
    const headers = new Headers(init.headers || {});
    headers.set("Authorization", "Bearer " + this.passport.access_token);
    const resp = await fetch(base + path, { ...init, headers, credentials: "omit" });
    if (resp.status === 401 && !retried) {
      await this.login();
      return this.fetch(path, init, true);
    }
    if (!resp.ok) throw await errorOf(resp);
    return resp;
  }

  async get(path, query) {
    const resp = await this.fetch(withQuery(path, query));
    return resp.json();
  }

  async send(method, path, body) {
    const resp = await this.fetch(path, {
      method,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ user: this.user, ...(body || {}) }),
    });
    const text = await resp.text();
    return text ? JSON.parse(text) : {};
  }

  async upload(file) {
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("user", this.user);
    const resp = await this.fetch("/files/upload", { method: "POST", body: form });
    return resp.json();
  }

  // stream sends a request whose answer is an event stream and calls onEvent for each event.
  // It resolves when the stream ends; signal aborts it.
  async stream(method, path, body, onEvent, signal) {
    const init = { method, signal };
    if (body !== undefined) {
      init.headers = { "Content-Type": "application/json" };
      init.body = JSON.stringify({ user: this.user, ...body });
    }
    const resp = await this.fetch(path, init);
    const type = resp.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      onEvent(await resp.json());
      return;
    }
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(buf[i] === "\r" ? i + 4 : i + 2);
        const data = block
          .split(/\r?\n/)
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, ""))
          .join("\n");
        if (!data) continue;
        let ev;
        try {
          ev = JSON.parse(data);
        } catch {
          continue;
        }
        onEvent(ev);
      }
    }
  }
}

export function withQuery(path, query) {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? path + "?" + s : path;
}

async function errorOf(resp) {
  let body = {};
  try {
    body = await resp.json();
  } catch {
    /* not JSON */
  }
  return new APIError(resp.status, body.code, body.message);
}

// fileType is the Dify file type of a File by its media type.
export function fileType(file) {
  const m = (file.type || "").split("/")[0];
  if (m === "image") return "image";
  if (m === "audio") return "audio";
  if (m === "video") return "video";
  return "document";
}

// The entry of every page: the shell (server/pages.go) names the site code, the kind of page and
// whether it is the embedded variant in data- attributes of <body>.
import { APIError, Client } from "./api.js";
import { chatPage } from "./chat.js";
import { completionPage } from "./completion.js";
import { h } from "./dom.js";
import { setLanguage, t } from "./i18n.js";
import { workflowPage } from "./workflow.js";

const body = document.body;
const code = body.dataset.code;
const page = body.dataset.page; // chat, chatbot, completion, workflow
const root = document.getElementById("app");
setLanguage(body.dataset.lang || navigator.language);

async function start() {
  const client = new Client(code);
  try {
    await client.login();
  } catch (e) {
    if (e instanceof APIError && e.code === "passcode_required") return passcode(client, false);
    return fail(e);
  }
  await open(client);
}

// passcode asks for the site's passcode and logs in with it.
function passcode(client, wrong) {
  const input = h("input", { id: "passcode", type: "password", autocomplete: "current-password", required: true });
  const msg = h("p", { class: "error", role: "alert" }, wrong ? t("passcodeWrong") : "");
  const form = h(
    "form",
    { class: "card passcode" },
    h("h1", {}, t("passcodeTitle")),
    h("label", { for: "passcode" }, t("passcodeLabel")),
    input,
    msg,
    h("button", { type: "submit", class: "primary" }, t("submit")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await client.login(input.value);
    } catch (e) {
      if (e instanceof APIError && e.code === "passcode_required") return passcode(client, true);
      return fail(e);
    }
    await open(client);
  });
  root.replaceChildren(form);
  input.focus();
}

async function open(client) {
  try {
    const [site, params] = await Promise.all([client.get("/site"), client.get("/parameters")]);
    if (site.default_language) setLanguage(site.default_language);
    if (site.title) document.title = site.title;
    const preset = page === "chatbot" ? await embedInputs() : { inputs: {} };
    const ctx = { client, site, params, page, code, root, preset };
    if (page === "completion") return completionPage(ctx);
    if (page === "workflow") return workflowPage(ctx);
    return chatPage(ctx);
  } catch (e) {
    fail(e);
  }
}

function fail(e) {
  const msg = e instanceof APIError && e.status === 404 ? t("notFound") : t("error", { message: e.message });
  root.replaceChildren(h("div", { class: "card", role: "alert" }, msg));
}

// embedInputs reads what the bubble (embed.min.js) put in the URL: each input, system variable
// (sys.…) and user variable (user.…) as gzip then base64, as Dify's bubble sends them. A value
// that is not that is taken as plain text.
async function embedInputs() {
  const out = { inputs: {}, system: {}, user: {} };
  for (const [k, v] of new URLSearchParams(location.search)) {
    const val = await gunzip(v);
    if (k.startsWith("sys.")) out.system[k.slice(4)] = val;
    else if (k.startsWith("user.")) out.user[k.slice(5)] = val;
    else out.inputs[k] = val;
  }
  return out;
}

async function gunzip(b64) {
  try {
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  } catch {
    return b64;
  }
}

start();

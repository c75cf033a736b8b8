// The chat page (/chat/{code}) and its embedded variant (/chatbot/{code}, no sidebar): the
// input form before the first message, streamed Markdown answers, stop and regenerate, the
// opening statement and suggested questions, uploads, citations, feedback, agent steps, speech,
// the conversation list, and the human-input forms of a paused Chatflow.
import { fileType } from "./api.js";
import { h, icon, iconButton, uid } from "./dom.js";
import { inputForm } from "./form.js";
import { t } from "./i18n.js";
import { render, renderInto } from "./markdown.js";
import { siteFooter, siteHeader } from "./site.js";

export function chatPage(ctx) {
  const { client, site, params, page, code, root, preset } = ctx;
  const embedded = page === "chatbot";
  const convKey = "parley.conv." + code;
  const st = {
    conv: localStorage.getItem(convKey) || "",
    inputs: {},
    busy: false,
    task: "",
    abort: null,
    last: null, // {query, files} of the last message sent, for regenerate
    pending: [], // uploaded files waiting to be sent
    lastAnswer: null,
  };

  // ---------------------------------------------------------------- layout
  const log = h("div", { class: "messages", id: "messages", role: "log", "aria-live": "polite", "aria-label": t("messages") });
  const textarea = h("textarea", { id: "query", rows: 1, placeholder: site.input_placeholder || t("messagePlaceholder"), "aria-label": t("messageLabel") });
  const sendBtn = h("button", { type: "submit", class: "send primary", id: "send", "aria-label": t("send"), title: t("send") }, icon("send"));
  const stopBtn = h("button", { type: "button", class: "stop", id: "stop", hidden: true, onclick: stop }, icon("stop"), " ", t("stop"));
  const chips = h("div", { class: "chips", "aria-live": "polite" });
  const tools = h("div", { class: "composer-tools" });
  const composer = h("form", { class: "composer", id: "composer" }, chips, h("div", { class: "composer-row" }, tools, textarea, sendBtn));
  const formBox = h("div", { class: "form-box" });
  const errBox = h("p", { class: "error", role: "alert", id: "error" });
  const citationPanel = h("dialog", { class: "panel", id: "citation-panel", "aria-labelledby": "citation-title" });
  const list = h("nav", { class: "conv-list", "aria-label": t("conversations") });
  const sidebar = embedded ? null : h("aside", { class: "sidebar", id: "sidebar" }, h("button", { type: "button", class: "new-chat", id: "new-chat", onclick: newChat }, icon("plus"), " ", t("newChat")), list);

  const headerExtra = [];
  if (embedded) {
    headerExtra.push(iconButton("plus", t("newChat"), newChat, "new-chat"));
    if (window.parent !== window) headerExtra.push(iconButton("expand", t("expand"), () => window.parent.postMessage({ type: "dify-chatbot-expand-change" }, "*")));
  } else {
    headerExtra.push(iconButton("menu", t("menu"), () => sidebar.classList.toggle("open"), "menu-toggle"));
  }
  const main = h("main", { class: "chat-main" }, siteHeader(site, h("div", { class: "header-tools" }, headerExtra)), h("div", { class: "scroller" }, formBox, log), stopBtn, errBox, composer, siteFooter(site));
  root.replaceChildren(h("div", { class: "chat-layout" + (embedded ? " embedded" : "") }, sidebar, main, citationPanel));

  if (embedded && window.parent !== window) window.parent.postMessage({ type: "dify-chatbot-iframe-ready" }, "*");

  // ---------------------------------------------------------------- composer
  composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = textarea.value.trim();
    if (!q || st.busy) return;
    // The message leaves the composer only once the input form is filled in.
    send(q, st.pending.slice(), () => {
      textarea.value = "";
      st.pending = [];
      chips.replaceChildren();
    });
  });
  textarea.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      composer.requestSubmit();
    }
  });

  const fu = params.file_upload || {};
  if (fu.enabled || (fu.image && fu.image.enabled)) {
    const onlyImages = !fu.enabled;
    const picker = h("input", { type: "file", id: "file-input", multiple: true, hidden: true, accept: onlyImages ? "image/*" : undefined });
    picker.addEventListener("change", async () => {
      for (const file of [...picker.files]) await attach(file);
      picker.value = "";
    });
    tools.append(picker, iconButton("attach", t("attach"), () => picker.click(), "attach"));
  }
  if (params.speech_to_text && params.speech_to_text.enabled && navigator.mediaDevices && window.MediaRecorder) tools.append(micButton());

  async function attach(file) {
    const chip = h("span", { class: "chip" }, file.name, " · ", t("uploading"));
    chips.append(chip);
    try {
      const up = await client.upload(file);
      const f = { type: fileType(file), transfer_method: "local_file", upload_file_id: up.id, name: file.name };
      st.pending.push(f);
      chip.replaceChildren(
        file.name,
        iconButton("close", t("removeFile") + " " + file.name, () => {
          st.pending.splice(st.pending.indexOf(f), 1);
          chip.remove();
        }),
      );
    } catch (e) {
      chip.replaceChildren(file.name + " · " + t("uploadFailed") + ": " + e.message);
    }
  }

  function micButton() {
    let rec = null;
    const btn = iconButton("mic", t("record"), async () => {
      if (rec) return rec.stop();
      const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
      const parts = [];
      rec = new MediaRecorder(stream);
      rec.ondataavailable = (e) => parts.push(e.data);
      rec.onstop = async () => {
        stream.getTracks().forEach((tr) => tr.stop());
        rec = null;
        btn.classList.remove("recording");
        btn.setAttribute("aria-label", t("record"));
        const form = new FormData();
        form.append("file", new Blob(parts, { type: "audio/webm" }), "speech.webm");
        form.append("user", client.user);
        try {
          const r = await (await client.fetch("/audio-to-text", { method: "POST", body: form })).json();
          textarea.value += r.text || "";
          textarea.focus();
        } catch (e) {
          showError(e);
        }
      };
      rec.start();
      btn.classList.add("recording");
      btn.setAttribute("aria-label", t("recording"));
    }, "mic");
    return btn;
  }

  // ---------------------------------------------------------------- welcome and input form
  let form = null;
  function welcome() {
    log.replaceChildren();
    form = inputForm(client, params.user_input_form, { ...preset.inputs }, { legend: t("inputs") });
    formBox.replaceChildren(form.empty ? "" : form.el);
    opening(preset.inputs);
    const qs = (params.suggested_questions || []).filter(Boolean);
    if (qs.length) log.append(suggestions(qs));
  }

  // opening shows the app's opening statement, its {{variables}} filled from inputs.
  function opening(inputs) {
    if (!params.opening_statement) return;
    const a = answerBubble();
    a.el.classList.add("opening");
    a.text = params.opening_statement.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (m, k) => (k in inputs ? inputs[k] : m));
    a.done();
  }

  function suggestions(qs) {
    return h("div", { class: "suggestions", role: "group", "aria-label": t("suggested") }, qs.map((q) => h("button", { type: "button", class: "suggestion", onclick: () => !st.busy && send(q, []) }, q)));
  }

  // ---------------------------------------------------------------- messages
  function userBubble(query, files) {
    const el = h("div", { class: "msg user" }, h("span", { class: "sr-only" }, t("user") + ": "), h("div", { class: "content" }, query));
    if (files && files.length) el.append(h("div", { class: "files" }, files.map((f) => h("span", { class: "chip" }, f.name || f.filename || f.type))));
    log.append(el);
    el.scrollIntoView({ block: "end" });
    return el;
  }

  // answerBubble is one answer: its Markdown, agent steps, forms, citations and actions.
  function answerBubble() {
    const content = h("div", { class: "content markdown" });
    const steps = h("div", { class: "steps" });
    const extra = h("div", { class: "extra" });
    const actions = h("div", { class: "actions" });
    const el = h("div", { class: "msg answer", "aria-busy": "false" }, h("span", { class: "sr-only" }, t("assistant") + ": "), steps, content, extra, actions);
    log.append(el);
    let pending = false;
    const a = {
      el,
      text: "",
      id: "",
      thoughts: new Map(),
      setText(s) {
        a.text = s;
        if (pending) return;
        pending = true;
        requestAnimationFrame(() => {
          pending = false;
          renderInto(content, a.text);
          if (nearBottom()) el.scrollIntoView({ block: "end" });
        });
      },
      busy(on) {
        el.setAttribute("aria-busy", on ? "true" : "false");
        el.classList.toggle("streaming", on);
      },
      done() {
        renderInto(content, a.text);
      },
      thought(ev) {
        let d = a.thoughts.get(ev.id);
        if (!d) {
          d = h("details", { class: "thought" });
          a.thoughts.set(ev.id, d);
          if (!steps.firstChild) steps.append(h("p", { class: "muted steps-title" }, t("agentSteps")));
          steps.append(d);
        }
        const body = h("div", {});
        if (ev.thought) body.append(render(ev.thought));
        if (ev.tool) body.append(h("p", {}, h("strong", {}, t("toolInput") + ": "), h("code", {}, String(ev.tool_input || ""))));
        if (ev.observation) body.append(h("p", {}, h("strong", {}, t("observation") + ": ")), h("pre", {}, String(ev.observation)));
        d.replaceChildren(h("summary", {}, ev.tool ? t("tool") + ": " + ev.tool : t("thinking")), body);
      },
      citations(res) {
        if (!res || !res.length) return;
        const box = h("div", { class: "citations" }, h("p", { class: "muted" }, t("citations")));
        for (const r of res) box.append(h("button", { type: "button", class: "citation", onclick: () => openCitation(r) }, (r.position ? r.position + ". " : "") + (r.document_name || r.dataset_name || "")));
        extra.append(box);
      },
      file(f) {
        if (!f || !f.url) return;
        const url = safeURL(f.url);
        if (!url) return;
        extra.append(f.type === "image" ? h("img", { class: "answer-image", src: url, alt: f.filename || "" }) : h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, f.filename || url));
      },
      error(msg) {
        extra.append(h("p", { class: "error", role: "alert" }, msg));
      },
      actions(feedback) {
        actions.replaceChildren();
        if (!a.id) return;
        let rating = feedback || null;
        const like = iconButton("like", t("like"), () => rate("like"), "like");
        const dislike = iconButton("dislike", t("dislike"), () => rate("dislike"), "dislike");
        const mark = () => {
          like.setAttribute("aria-pressed", String(rating === "like"));
          dislike.setAttribute("aria-pressed", String(rating === "dislike"));
        };
        const rate = async (r) => {
          const next = rating === r ? null : r;
          try {
            await client.send("POST", "/messages/" + a.id + "/feedbacks", { rating: next });
            rating = next;
            mark();
          } catch (e) {
            showError(e);
          }
        };
        mark();
        actions.append(like, dislike);
        if (params.text_to_speech && params.text_to_speech.enabled) actions.append(iconButton("speak", t("speak"), () => speak(a), "speak"));
        actions.append(iconButton("regen", t("regenerate"), regenerate, "regenerate"));
      },
      humanForm: (data, runID) => humanForm(a, extra, data, runID),
    };
    return a;
  }

  function nearBottom() {
    const s = log.parentElement;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 120;
  }

  function openCitation(r) {
    citationPanel.replaceChildren(
      h("h2", { id: "citation-title" }, r.document_name || r.dataset_name || t("citations")),
      r.score !== undefined && r.score !== null ? h("p", { class: "muted" }, "score " + Number(r.score).toFixed(3)) : null,
      h("div", { class: "chunk" }, r.content || ""),
      h("button", { type: "button", class: "primary", onclick: () => citationPanel.close() }, t("close")),
    );
    citationPanel.showModal();
  }

  const autoPlay = !!(params.text_to_speech && params.text_to_speech.enabled && params.text_to_speech.autoPlay === "enabled");

  function playBase64(parts) {
    try {
      const bytes = parts.map((p) => Uint8Array.from(atob(p), (c) => c.charCodeAt(0)));
      const url = URL.createObjectURL(new Blob(bytes, { type: "audio/mpeg" }));
      const audio = new Audio(url);
      audio.onended = () => URL.revokeObjectURL(url);
      audio.play().catch(() => URL.revokeObjectURL(url));
    } catch {
      /* not audio */
    }
  }

  async function speak(a) {
    try {
      const resp = await client.fetch("/text-to-audio", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ message_id: a.id, text: a.text, user: client.user }) });
      const url = URL.createObjectURL(await resp.blob());
      const audio = new Audio(url);
      audio.onended = () => URL.revokeObjectURL(url);
      await audio.play();
    } catch (e) {
      showError(e);
    }
  }

  // ---------------------------------------------------------------- sending
  async function send(query, files, started) {
    errBox.textContent = "";
    if (!st.conv) {
      try {
        st.inputs = form ? await form.values() : {};
      } catch (e) {
        errBox.textContent = e.message;
        return;
      }
      if (form) form.disable(true);
    }
    if (started) started();
    for (const s of log.querySelectorAll(".suggestions")) s.remove();
    if (st.lastAnswer) st.lastAnswer.el.querySelector(".regenerate")?.remove();
    st.last = { query, files };
    userBubble(query, files);
    const a = answerBubble();
    const body = { query, inputs: st.inputs, response_mode: "streaming", conversation_id: st.conv, files: files.map(({ name, ...f }) => f), auto_generate_name: true };
    await run(a, (onEvent, signal) => client.stream("POST", "/chat-messages", body, onEvent, signal));
  }

  // run streams one answer (a new message, or a run resumed after a form) into a.
  async function run(a, open) {
    busy(true);
    a.busy(true);
    st.lastAnswer = a;
    const ctl = new AbortController();
    st.abort = ctl;
    let ended = false;
    let paused = false;
    const tts = [];
    const wasNew = !st.conv;
    const onEvent = (ev) => {
      if (ev.task_id) st.task = ev.task_id;
      if (ev.conversation_id && ev.conversation_id !== st.conv) setConv(ev.conversation_id);
      if (ev.message_id) a.id = ev.message_id;
      switch (ev.event) {
        case "message":
        case "agent_message":
          a.setText(a.text + (ev.answer || ""));
          break;
        case "message_replace":
          a.setText(ev.answer || "");
          break;
        case "agent_thought":
          a.thought(ev);
          break;
        case "message_file":
          a.file(ev);
          break;
        case "message_end":
          ended = true;
          if (st.conv) localStorage.removeItem(formKey(st.conv));
          if (ev.id) a.id = ev.id;
          a.citations(ev.metadata && ev.metadata.retriever_resources);
          break;
        case "human_input_required":
          a.humanForm(ev.data, ev.workflow_run_id);
          // Kept so that a reload shows the form again while it waits.
          if (st.conv && ev.data && ev.data.form_token) localStorage.setItem(formKey(st.conv), JSON.stringify({ token: ev.data.form_token, run: ev.workflow_run_id, node_id: ev.data.node_id, node_title: ev.data.node_title }));
          break;
        case "human_input_form_filled":
          a.el.querySelector(".hi-form[data-node='" + CSS.escape(ev.data.node_id) + "']")?.classList.add("submitted");
          break;
        case "human_input_form_timeout":
          a.error(t("formTimedOut"));
          break;
        case "workflow_paused":
          paused = true;
          break;
        case "tts_message":
          // The app reads its answers aloud as they stream: the audio is played at its end.
          if (ev.audio) tts.push(ev.audio);
          break;
        case "tts_message_end":
          if (tts.length && autoPlay) playBase64(tts.splice(0));
          break;
        case "error":
          a.error(ev.message || ev.code || "error");
          break;
        default:
          if (!ev.event && ev.answer !== undefined) {
            // A blocking answer.
            a.setText(ev.answer);
            a.id = ev.message_id || ev.id || a.id;
            ended = true;
          }
      }
    };
    try {
      await open(onEvent, ctl.signal);
    } catch (e) {
      if (e.name !== "AbortError") a.error(t("error", { message: e.message }));
    }
    a.done();
    a.busy(false);
    busy(false);
    st.abort = null;
    st.task = "";
    if (!paused) a.actions();
    if (wasNew && st.conv && !embedded) loadList();
    if (ended && !paused && a.id && params.suggested_questions_after_answer && params.suggested_questions_after_answer.enabled) {
      try {
        const r = await client.get("/messages/" + a.id + "/suggested", { user: client.user });
        if (r.data && r.data.length && st.lastAnswer === a) log.append(suggestions(r.data));
      } catch {
        /* no suggestions */
      }
    }
  }

  function busy(on) {
    st.busy = on;
    stopBtn.hidden = !on;
    sendBtn.disabled = on;
    // Focus stays in the composer (an Enter still held must not press Stop); once the Stop
    // button goes away while focused, focus goes back to the composer.
    if (!on && (document.activeElement === stopBtn || document.activeElement === document.body)) textarea.focus({ preventScroll: true });
  }

  async function stop() {
    const task = st.task;
    const ctl = st.abort;
    if (task) {
      try {
        await client.send("POST", "/chat-messages/" + task + "/stop", {});
      } catch {
        /* the stream may have ended */
      }
    }
    // The stream ends on its own after a stop; a stream that does not is cut.
    setTimeout(() => ctl && ctl.abort(), task ? 3000 : 0);
  }

  function regenerate() {
    if (st.busy || !st.last) return;
    send(st.last.query, st.last.files || []);
  }

  function setConv(id) {
    st.conv = id;
    if (id) localStorage.setItem(convKey, id);
    else localStorage.removeItem(convKey);
    for (const b of list.querySelectorAll(".conv-open")) b.setAttribute("aria-current", String(b.dataset.id === id));
  }

  // ---------------------------------------------------------------- human-input forms
  function humanForm(a, into, data, runID) {
    if (!data || !data.form_token) return;
    const values = {};
    const content = String(data.form_content || "").replace(/\{\{#\$output\.(\w+)#\}\}/g, (_, name) => "`" + name + "`");
    const box = h("form", { class: "hi-form", "data-node": data.node_id, "aria-label": data.node_title || "" }, h("p", { class: "hi-title" }, data.node_title || ""), h("div", { class: "markdown" }, render(content)));
    const defaults = data.resolved_default_values || {};
    for (const f of data.inputs || []) {
      const id = uid("hi");
      const name = f.output_variable_name;
      const def = defaults[name] ?? (f.default && f.default.type === "constant" ? f.default.value : "") ?? "";
      const input = f.type === "paragraph" ? h("textarea", { id, name, rows: 3 }) : h("input", { id, name, type: "text" });
      input.value = def ?? "";
      values[name] = input;
      box.append(h("div", { class: "field" }, h("label", { for: id }, name), input));
    }
    const msg = h("p", { class: "error", role: "alert" });
    const buttons = h("div", { class: "hi-actions" });
    for (const act of data.actions || data.user_actions || []) {
      buttons.append(
        h(
          "button",
          {
            type: "button",
            class: act.button_style === "primary" ? "primary" : "",
            "data-action": act.id,
            onclick: async () => {
              const inputs = {};
              for (const [k, el] of Object.entries(values)) inputs[k] = el.value;
              try {
                await client.send("POST", "/form/human_input/" + data.form_token, { inputs, action: act.id });
              } catch (e) {
                msg.textContent = e.message;
                return;
              }
              if (st.conv) localStorage.removeItem(formKey(st.conv));
              for (const el of box.querySelectorAll("input,textarea,button")) el.disabled = true;
              box.classList.add("submitted");
              box.append(h("p", { class: "muted" }, t("formSubmitted", { action: act.title })));
              if (runID) await run(a, (onEvent, signal) => client.stream("GET", "/workflow/" + runID + "/events?user=" + encodeURIComponent(client.user), undefined, onEvent, signal));
            },
          },
          act.title,
        ),
      );
    }
    box.append(buttons, msg);
    box.addEventListener("submit", (ev) => ev.preventDefault());
    into.append(box);
  }

  // ---------------------------------------------------------------- conversations
  async function loadList() {
    if (embedded) return;
    try {
      const [pinned, all] = await Promise.all([client.get("/conversations", { user: client.user, limit: 100, pinned: "true" }), client.get("/conversations", { user: client.user, limit: 100 })]);
      const pinnedIDs = new Set((pinned.data || []).map((c) => c.id));
      const rest = (all.data || []).filter((c) => !pinnedIDs.has(c.id));
      list.replaceChildren();
      if (pinnedIDs.size) list.append(h("h2", { class: "list-title" }, t("pinned")), h("ul", {}, pinned.data.map((c) => row(c, true))));
      list.append(h("h2", { class: "list-title" }, t("conversations")), h("ul", {}, rest.map((c) => row(c, false))));
    } catch (e) {
      list.replaceChildren(h("p", { class: "error" }, e.message));
    }
  }

  function row(c, pinned) {
    const open = h("button", { type: "button", class: "conv-open", "data-id": c.id, "aria-current": String(c.id === st.conv), onclick: () => openConv(c) }, c.name || t("untitled"));
    const act = (label, cls, fn) => h("button", { type: "button", class: "conv-act " + cls, "aria-label": label + ": " + (c.name || t("untitled")), title: label, onclick: fn }, label);
    return h(
      "li",
      { class: "conv" },
      open,
      h(
        "div",
        { class: "conv-actions" },
        act(pinned ? t("unpin") : t("pin"), pinned ? "unpin" : "pin", async () => {
          await client.send("PATCH", "/conversations/" + c.id + (pinned ? "/unpin" : "/pin"), {}).catch(showError);
          loadList();
        }),
        act(t("rename"), "rename", async () => {
          const name = prompt(t("renamePrompt"), c.name || "");
          if (!name) return;
          await client.send("POST", "/conversations/" + c.id + "/name", { name, auto_generate: false }).catch(showError);
          loadList();
        }),
        act(t("delete"), "delete", async () => {
          if (!confirm(t("deleteConfirm"))) return;
          await client.send("DELETE", "/conversations/" + c.id, {}).catch(showError);
          if (c.id === st.conv) newChat();
          loadList();
        }),
      ),
    );
  }

  async function openConv(c) {
    if (st.busy) return;
    sidebar && sidebar.classList.remove("open");
    st.inputs = c.inputs || {};
    setConv(c.id);
    await loadMessages();
  }

  async function loadMessages() {
    formBox.replaceChildren();
    log.replaceChildren();
    let page;
    try {
      page = await client.get("/messages", { conversation_id: st.conv, user: client.user, limit: 100 });
    } catch (e) {
      if (e.status === 404) {
        setConv("");
        return welcome();
      }
      return showError(e);
    }
    if (page.data && page.data.length && page.data[0].inputs && !Object.keys(st.inputs).length) st.inputs = page.data[0].inputs;
    opening(st.inputs);
    for (const m of page.data || []) {
      userBubble(m.query, (m.message_files || []).filter((f) => f.belongs_to === "user"));
      const a = answerBubble();
      a.id = m.id;
      for (const th of m.agent_thoughts || []) a.thought(th);
      a.text = m.answer || "";
      a.done();
      for (const f of (m.message_files || []).filter((f) => f.belongs_to === "assistant")) a.file(f);
      a.citations(m.retriever_resources);
      if (m.error) a.error(m.error);
      a.actions(m.feedback && m.feedback.rating);
      st.lastAnswer = a;
      st.last = { query: m.query, files: [] };
    }
    await pendingForm();
    // Regenerate is for the last answer only.
    const regen = [...log.querySelectorAll(".regenerate")];
    regen.slice(0, -1).forEach((b) => b.remove());
    log.lastElementChild?.scrollIntoView({ block: "end" });
  }

  function formKey(conv) {
    return "parley.form." + code + "." + conv;
  }

  // pendingForm shows again, in the last answer, the human-input form the conversation's run
  // waits for (kept when it arrived), while the form still takes a submission.
  async function pendingForm() {
    const key = formKey(st.conv);
    let pending;
    try {
      pending = JSON.parse(localStorage.getItem(key) || "null");
    } catch {
      pending = null;
    }
    if (!pending || !st.lastAnswer) return;
    try {
      const view = await client.get("/form/human_input/" + pending.token);
      st.lastAnswer.humanForm({ ...view, form_token: pending.token, node_id: pending.node_id, node_title: pending.node_title, actions: view.user_actions }, pending.run);
    } catch {
      localStorage.removeItem(key);
    }
  }

  function newChat() {
    if (st.busy) return;
    setConv("");
    st.inputs = {};
    st.last = null;
    st.lastAnswer = null;
    sidebar && sidebar.classList.remove("open");
    welcome();
    textarea.focus();
  }

  function showError(e) {
    errBox.textContent = t("error", { message: e.message || String(e) });
  }

  // ---------------------------------------------------------------- start
  loadList();
  if (st.conv) loadMessages();
  else welcome();
  textarea.focus({ preventScroll: true });
}

// safeURL keeps http(s), blob and same-origin URLs; anything else (javascript:, data: …) is dropped.
export function safeURL(u) {
  try {
    const url = new URL(u, location.href);
    return ["http:", "https:", "blob:"].includes(url.protocol) ? url.href : "";
  } catch {
    return "";
  }
}

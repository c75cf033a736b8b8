// The completion page (/completion/{code}): the input form, then the streamed result.
import { h, icon, iconButton } from "./dom.js";
import { inputForm } from "./form.js";
import { t } from "./i18n.js";
import { renderInto } from "./markdown.js";
import { siteFooter, siteHeader } from "./site.js";

export function completionPage(ctx) {
  const { client, site, params, root, preset } = ctx;
  const form = inputForm(client, params.user_input_form, preset.inputs);
  const out = h("div", { class: "content markdown result", id: "result", role: "status", "aria-live": "polite", "aria-busy": "false" });
  const err = h("p", { class: "error", role: "alert", id: "error" });
  const runBtn = h("button", { type: "submit", class: "primary", id: "run" }, t("run"));
  const stopBtn = h("button", { type: "button", id: "stop", hidden: true }, icon("stop"), " ", t("stop"));
  const actions = h("div", { class: "actions" });
  form.el.append(h("div", { class: "form-actions" }, runBtn, stopBtn));
  root.replaceChildren(h("main", { class: "single" }, siteHeader(site), h("section", { class: "card" }, form.el), err, h("section", { class: "card" }, h("h2", {}, t("result")), out, actions), siteFooter(site)));

  let task = "";
  let ctl = null;
  stopBtn.addEventListener("click", async () => {
    if (task) await client.send("POST", "/completion-messages/" + task + "/stop", {}).catch(() => {});
    const c = ctl;
    setTimeout(() => c && c.abort(), 3000);
  });

  form.el.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    let inputs;
    try {
      inputs = await form.values();
    } catch (e) {
      err.textContent = e.message;
      return;
    }
    let text = "";
    let id = "";
    let frame = 0;
    runBtn.disabled = true;
    stopBtn.hidden = false;
    out.setAttribute("aria-busy", "true");
    actions.replaceChildren();
    out.replaceChildren();
    ctl = new AbortController();
    try {
      await client.stream(
        "POST",
        "/completion-messages",
        { inputs, response_mode: "streaming" },
        (ev) => {
          if (ev.task_id) task = ev.task_id;
          if (ev.message_id) id = ev.message_id;
          if (ev.event === "message") text += ev.answer || "";
          else if (ev.event === "message_replace") text = ev.answer || "";
          else if (ev.event === "error") err.textContent = t("error", { message: ev.message || ev.code });
          else if (!ev.event && ev.answer !== undefined) text = ev.answer;
          if (!frame) frame = requestAnimationFrame(() => ((frame = 0), renderInto(out, text)));
        },
        ctl.signal,
      );
    } catch (e) {
      if (e.name !== "AbortError") err.textContent = t("error", { message: e.message });
    }
    renderInto(out, text);
    out.setAttribute("aria-busy", "false");
    runBtn.disabled = false;
    stopBtn.hidden = true;
    task = "";
    if (id) {
      let rating = null;
      const rate = (r) => async () => {
        rating = rating === r ? null : r;
        await client.send("POST", "/messages/" + id + "/feedbacks", { rating }).catch(() => {});
      };
      actions.append(iconButton("like", t("like"), rate("like"), "like"), iconButton("dislike", t("dislike"), rate("dislike"), "dislike"));
    }
  });
}

// The completion page (/completion/{code}): the input form, then the streamed result.
import { h, icon, iconButton } from "./dom.js";
import { formRun, inputForm } from "./form.js";
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

  let text = "";
  let id = "";
  let frame = 0;
  formRun({
    client,
    form,
    runBtn,
    stopBtn,
    err,
    path: "/completion-messages",
    stopPath: "/completion-messages/",
    begin() {
      text = "";
      id = "";
      frame = 0;
      out.setAttribute("aria-busy", "true");
      actions.replaceChildren();
      out.replaceChildren();
    },
    onEvent(ev) {
      if (ev.message_id) id = ev.message_id;
      if (ev.event === "message") text += ev.answer || "";
      else if (ev.event === "message_replace") text = ev.answer || "";
      else if (ev.event === "error") err.textContent = t("error", { message: ev.message || ev.code });
      else if (!ev.event && ev.answer !== undefined) text = ev.answer;
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), renderInto(out, text)));
    },
    end() {
      renderInto(out, text);
      out.setAttribute("aria-busy", "false");
      if (id) {
        const message = id;
        let rating = null;
        const rate = (r) => async () => {
          rating = rating === r ? null : r;
          await client.send("POST", "/messages/" + message + "/feedbacks", { rating }).catch(() => {});
        };
        actions.append(iconButton("like", t("like"), rate("like"), "like"), iconButton("dislike", t("dislike"), rate("dislike"), "dislike"));
      }
    },
  });
}

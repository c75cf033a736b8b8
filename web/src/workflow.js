// The workflow page (/workflow/{code}): the input form, a run with its nodes' progress, and the
// outputs (text as Markdown, files as links, anything else as JSON).
import { safeURL } from "./chat.js";
import { h, icon } from "./dom.js";
import { formRun, inputForm } from "./form.js";
import { t } from "./i18n.js";
import { render } from "./markdown.js";
import { siteFooter, siteHeader } from "./site.js";

export function workflowPage(ctx) {
  const { client, site, params, root, preset } = ctx;
  const form = inputForm(client, params.user_input_form, preset.inputs);
  const nodes = h("ol", { class: "nodes", id: "nodes", "aria-label": t("nodes") });
  const outputs = h("div", { class: "outputs", id: "outputs", role: "status", "aria-live": "polite", "aria-busy": "false" });
  const err = h("p", { class: "error", role: "alert", id: "error" });
  const runBtn = h("button", { type: "submit", class: "primary", id: "run" }, t("run"));
  const stopBtn = h("button", { type: "button", id: "stop", hidden: true }, icon("stop"), " ", t("stop"));
  const status = h("p", { class: "muted", id: "run-status" });
  form.el.append(h("div", { class: "form-actions" }, runBtn, stopBtn));
  root.replaceChildren(
    h("main", { class: "single" }, siteHeader(site), h("section", { class: "card" }, form.el), err, h("section", { class: "card" }, h("h2", {}, t("nodes")), status, nodes), h("section", { class: "card" }, h("h2", {}, t("outputs")), outputs), siteFooter(site)),
  );

  let rows = new Map();
  let text = "";
  let finished = false;
  formRun({
    client,
    form,
    runBtn,
    stopBtn,
    err,
    path: "/workflows/run",
    stopPath: "/workflows/tasks/",
    begin() {
      nodes.replaceChildren();
      outputs.replaceChildren();
      outputs.setAttribute("aria-busy", "true");
      status.textContent = t("running");
      rows = new Map();
      text = "";
      finished = false;
    },
    onEvent(ev) {
      const d = ev.data || {};
      switch (ev.event) {
        case "node_started": {
          const li = h("li", { class: "node running", "data-node": d.node_id }, h("span", { class: "node-title" }, d.title || d.node_id), h("span", { class: "node-status" }, t("running")));
          rows.set(d.id || d.node_id, li);
          nodes.append(li);
          break;
        }
        case "node_finished": {
          const li = rows.get(d.id || d.node_id);
          if (li) {
            li.className = "node " + (d.status || "");
            li.querySelector(".node-status").textContent = (d.status === "succeeded" ? t("succeeded") : d.status || "") + (d.elapsed_time ? " · " + Number(d.elapsed_time).toFixed(2) + " s" : "");
          }
          break;
        }
        case "text_chunk":
          text += d.text || "";
          outputs.replaceChildren(render(text));
          break;
        case "workflow_finished":
          finished = true;
          status.textContent = d.status === "succeeded" ? t("succeeded") : t("failed") + (d.error ? ": " + d.error : "");
          showOutputs(outputs, d.outputs || {});
          break;
        case "error":
          err.textContent = t("error", { message: ev.message || ev.code });
          break;
        default:
          if (!ev.event && ev.data && ev.data.outputs) showOutputs(outputs, ev.data.outputs);
      }
    },
    end() {
      if (!finished && status.textContent === t("running")) status.textContent = t("stopped");
      outputs.setAttribute("aria-busy", "false");
    },
  });
}

function isFile(v) {
  return v && typeof v === "object" && !Array.isArray(v) && ("transfer_method" in v || v.dify_model_identity === "__dify__file__") && ("url" in v || "remote_url" in v);
}

function fileLink(f) {
  const url = safeURL(f.url || f.remote_url || "");
  const name = f.filename || f.name || url;
  if (!url) return h("span", {}, name);
  if (f.type === "image") return h("figure", {}, h("img", { src: url, alt: name }), h("figcaption", {}, h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, name)));
  return h("a", { href: url, target: "_blank", rel: "noopener noreferrer", download: name }, name);
}

function showOutputs(box, outputs) {
  box.replaceChildren();
  for (const [k, v] of Object.entries(outputs)) {
    let body;
    if (typeof v === "string") body = h("div", { class: "markdown" }, render(v));
    else if (isFile(v)) body = fileLink(v);
    else if (Array.isArray(v) && v.length && v.every(isFile)) body = h("ul", {}, v.map((f) => h("li", {}, fileLink(f))));
    else body = h("pre", {}, JSON.stringify(v, null, 2));
    box.append(h("section", { class: "output", "data-output": k }, h("h3", {}, k), body));
  }
}

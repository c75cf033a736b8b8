// The app's input form (user_input_form from GET /parameters): text-input, paragraph, select,
// number, checkbox, file and file-list. Values given by the embedding page (difyChatbotConfig
// inputs) fill it in; hidden inputs are sent without being shown.
import { fileType } from "./api.js";
import { h, uid } from "./dom.js";
import { t } from "./i18n.js";

export function inputForm(client, items, preset, opts = {}) {
  const fields = [];
  const form = h("form", { class: "input-form", novalidate: true });
  if (opts.legend) form.append(h("h2", { class: "form-title" }, opts.legend));
  for (const item of items || []) {
    const [type, spec] = Object.entries(item)[0] || [];
    if (!spec || !spec.variable) continue;
    const f = field(client, type, spec, preset ? preset[spec.variable] : undefined);
    fields.push(f);
    if (!spec.hide) form.append(f.el);
  }
  return {
    el: form,
    empty: fields.every((f) => f.spec.hide),
    // values collects the inputs; it throws an Error naming the first required input left empty.
    async values() {
      const out = {};
      for (const f of fields) {
        const v = await f.value();
        if ((v === "" || v === undefined || (Array.isArray(v) && !v.length)) && f.spec.required && !f.spec.hide) {
          f.focus();
          throw new Error(t("missingInput", { name: f.spec.label || f.spec.variable }));
        }
        if (v !== undefined && v !== "") out[f.spec.variable] = v;
      }
      return out;
    },
    disable(on) {
      for (const el of form.querySelectorAll("input,select,textarea")) el.disabled = on;
    },
  };
}

function field(client, type, spec, preset) {
  const id = uid("in");
  const label = h("label", { for: id }, spec.label || spec.variable, " ", h("span", { class: "muted" }, spec.required ? "" : "(" + t("optional") + ")"));
  const def = preset !== undefined ? preset : spec.default;
  let input;
  let value;
  switch (type) {
    case "paragraph":
      input = h("textarea", { id, name: spec.variable, rows: 4, required: spec.required });
      if (spec.max_length) input.maxLength = spec.max_length;
      input.value = def ?? "";
      value = () => input.value;
      break;
    case "select":
      input = h("select", { id, name: spec.variable, required: spec.required }, h("option", { value: "" }, t("choose")), (spec.options || []).map((o) => h("option", { value: o }, o)));
      input.value = def ?? "";
      value = () => input.value;
      break;
    case "number":
      input = h("input", { id, name: spec.variable, type: "number", step: "any", required: spec.required });
      input.value = def ?? "";
      value = () => (input.value === "" ? "" : Number(input.value));
      break;
    case "checkbox": {
      input = h("input", { id, name: spec.variable, type: "checkbox" });
      input.checked = def === true || def === "true" || def === "1";
      value = () => input.checked;
      const el = h("div", { class: "field field-check" }, input, h("label", { for: id }, spec.label || spec.variable));
      return { el, spec, value, focus: () => input.focus() };
    }
    case "file":
    case "file-list": {
      const many = type === "file-list";
      input = h("input", { id, name: spec.variable, type: "file", multiple: many });
      const status = h("span", { class: "muted", "aria-live": "polite" });
      let uploads = [];
      input.addEventListener("change", async () => {
        uploads = [];
        status.textContent = t("uploading");
        try {
          for (const file of input.files) {
            const up = await client.upload(file);
            uploads.push({ type: fileType(file), transfer_method: "local_file", upload_file_id: up.id });
          }
          status.textContent = uploads.length ? "✓" : "";
        } catch (e) {
          status.textContent = t("uploadFailed") + ": " + e.message;
        }
      });
      value = () => (many ? uploads : uploads[0]);
      const el = h("div", { class: "field" }, label, input, status);
      return { el, spec, value, focus: () => input.focus() };
    }
    default:
      input = h("input", { id, name: spec.variable, type: "text", required: spec.required });
      if (spec.max_length) input.maxLength = spec.max_length;
      input.value = def ?? "";
      value = () => input.value;
  }
  const el = h("div", { class: "field" }, label, input);
  return { el, spec, value, focus: () => input.focus() };
}

// formRun wires a one-shot page (Completion, Workflow) to its form. Run reads the form's values
// (showing why they are refused), shows Stop, calls begin(), and streams POST path with them,
// handing each event to onEvent; end() is called once the stream is over, however it ended.
// Stop asks the server to stop the task (stopPath + task id + "/stop") and drops the stream
// 3 s later if it has not ended by then.
export function formRun({ client, form, runBtn, stopBtn, err, path, stopPath, begin, onEvent, end }) {
  let task = "";
  let ctl = null;
  stopBtn.addEventListener("click", async () => {
    if (task) await client.send("POST", stopPath + task + "/stop", {}).catch(() => {});
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
    runBtn.disabled = true;
    stopBtn.hidden = false;
    begin();
    ctl = new AbortController();
    try {
      await client.stream(
        "POST",
        path,
        { inputs, response_mode: "streaming" },
        (ev) => {
          if (ev.task_id) task = ev.task_id;
          onEvent(ev);
        },
        ctl.signal,
      );
    } catch (e) {
      if (e.name !== "AbortError") err.textContent = t("error", { message: e.message });
    }
    runBtn.disabled = false;
    stopBtn.hidden = true;
    task = "";
    end();
  });
}

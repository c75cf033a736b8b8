// /embed.min.js: the chat bubble another site embeds, configured as Dify's is, by
// window.difyChatbotConfig = { token, baseUrl, inputs, systemVariables, userVariables,
// containerProps, draggable, dragAxis, dynamicScript, isDev }. It adds a round button
// (#dify-chatbot-bubble-button) that opens the chatbot page in an iframe
// (#dify-chatbot-bubble-window). Inputs and variables travel in the iframe's URL, each gzip then
// base64, as Dify's bubble sends them; /chatbot/{token} reads them back.
(function () {
  const buttonId = "dify-chatbot-bubble-button";
  const frameId = "dify-chatbot-bubble-window";
  const config = window.difyChatbotConfig;
  const v = (name, def) => "var(--" + buttonId + "-" + name + ", " + def + ")";

  async function pack(value) {
    const bytes = new TextEncoder().encode(String(value));
    const gz = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
    const out = new Uint8Array(await new Response(gz).arrayBuffer());
    let bin = "";
    for (const b of out) bin += String.fromCharCode(b);
    return btoa(bin);
  }

  async function query() {
    const params = new URLSearchParams();
    const add = async (obj, prefix) => {
      for (const [k, val] of Object.entries(obj || {})) params.set(prefix + k, await pack(val));
    };
    await add(config.inputs, "");
    await add(config.systemVariables, "sys.");
    await add(config.userVariables, "user.");
    return params.toString();
  }

  function frameStyle(el, expanded) {
    const s = el.style;
    s.position = "fixed";
    s.top = "unset";
    s.left = "unset";
    s.right = v("right", "1rem");
    s.bottom = "calc(" + v("bottom", "1rem") + " + " + v("height", "48px") + " + 0.75rem)";
    s.width = expanded ? "48%" : "24rem";
    s.minWidth = expanded ? "24rem" : "";
    s.maxWidth = expanded ? "40rem" : "calc(100vw - 2rem)";
    s.height = expanded ? "88%" : "43.75rem";
    s.maxHeight = "calc(100vh - 6rem)";
    s.border = "none";
    s.borderRadius = "0.75rem";
    s.boxShadow = "0 8px 32px rgba(0,0,0,0.25)";
    s.zIndex = "2147483640";
    s.overflow = "hidden";
    s.background = "#fff";
  }

  function svg(d, id) {
    const ns = "http://www.w3.org/2000/svg";
    const el = document.createElementNS(ns, "svg");
    el.setAttribute("viewBox", "0 0 24 24");
    el.setAttribute("width", "24");
    el.setAttribute("height", "24");
    el.setAttribute("aria-hidden", "true");
    el.id = id;
    const p = document.createElementNS(ns, "path");
    p.setAttribute("d", d);
    p.setAttribute("fill", "none");
    p.setAttribute("stroke", "white");
    p.setAttribute("stroke-width", "2");
    p.setAttribute("stroke-linecap", "round");
    p.setAttribute("stroke-linejoin", "round");
    el.append(p);
    return el;
  }

  async function embed() {
    if (!config || !config.token) {
      console.error("difyChatbotConfig is empty or has no token");
      return;
    }
    if (document.getElementById(buttonId)) return;
    const base = String(config.baseUrl || "https://" + (config.isDev ? "dev." : "") + "udify.app").replace(/\/+$/, "");
    const origin = new URL(base, location.href).origin;
    const qs = await query();
    const src = base + "/chatbot/" + encodeURIComponent(config.token) + (qs ? "?" + qs : "");
    if (src.length > 2048) console.error("The chatbot URL is longer than 2048 characters: send fewer inputs");

    let expanded = false;
    let dragged = false;
    const frame = document.createElement("iframe");
    frame.id = frameId;
    frame.title = "Chatbot";
    frame.allow = "fullscreen;microphone";
    frame.src = src;
    frameStyle(frame, false);
    frame.style.display = "none";
    document.body.appendChild(frame);

    const button = document.createElement("div");
    for (const [k, val] of Object.entries(config.containerProps || {})) {
      if (k === "className") button.classList.add(...String(val).split(" ").filter(Boolean));
      else if (k === "style") typeof val === "object" ? Object.assign(button.style, val) : (button.style.cssText = val);
      else if (typeof val === "function") button.addEventListener(k.replace(/^on/, "").toLowerCase(), val);
      else button[k] = val;
    }
    button.id = buttonId;
    button.setAttribute("role", "button");
    button.setAttribute("tabindex", "0");
    button.setAttribute("aria-label", "Open the chat");
    button.setAttribute("aria-expanded", "false");
    button.setAttribute("aria-controls", frameId);
    const s = button.style;
    s.position = "fixed";
    s.bottom = v("bottom", "1rem");
    s.right = v("right", "1rem");
    s.left = v("left", "unset");
    s.top = v("top", "unset");
    s.width = v("width", "48px");
    s.height = v("height", "48px");
    s.borderRadius = v("border-radius", "25px");
    s.backgroundColor = v("bg-color", "#155EEF");
    s.boxShadow = v("box-shadow", "rgba(0, 0, 0, 0.2) 0px 4px 8px 0px");
    s.cursor = "pointer";
    s.zIndex = "2147483647";
    s.display = "flex";
    s.alignItems = "center";
    s.justifyContent = "center";
    const openIcon = svg("M4 5h16v11H9l-5 4z", "openIcon");
    const closeIcon = svg("M18 18L6 6M6 18L18 6", "closeIcon");
    closeIcon.style.display = "none";
    button.append(openIcon, closeIcon);
    document.body.appendChild(button);

    const show = (on) => {
      frame.style.display = on ? "block" : "none";
      openIcon.style.display = on ? "none" : "block";
      closeIcon.style.display = on ? "block" : "none";
      button.setAttribute("aria-expanded", String(on));
      button.setAttribute("aria-label", on ? "Close the chat" : "Open the chat");
      button.title = on ? "Exit (ESC)" : "";
    };
    const toggle = (ev) => {
      if (dragged) return;
      if (ev && ev.type === "touchend") ev.preventDefault();
      show(frame.style.display === "none");
    };
    button.addEventListener("click", toggle);
    button.addEventListener("touchend", toggle);
    button.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        toggle();
      }
    });
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && frame.style.display !== "none") {
        show(false);
        button.focus();
      }
    });

    window.addEventListener("message", (ev) => {
      if (ev.origin !== origin || ev.source !== frame.contentWindow || !ev.data) return;
      if (ev.data.type === "dify-chatbot-iframe-ready") {
        frame.contentWindow.postMessage({ type: "dify-chatbot-config", payload: { isToggledByButton: true, isDraggable: !!config.draggable } }, origin);
      } else if (ev.data.type === "dify-chatbot-expand-change") {
        expanded = !expanded;
        const shown = frame.style.display;
        frameStyle(frame, expanded);
        frame.style.display = shown;
      }
    });

    if (config.draggable) drag(button, config.dragAxis || "both", (on) => (dragged = on), () => show(false));
  }

  function drag(el, axis, setDragged, hide) {
    let dx = 0;
    let dy = 0;
    let sx = 0;
    let sy = 0;
    let moved = false;
    const point = (e) => (e.touches ? e.touches[0] : e);
    const move = (e) => {
      const p = point(e);
      if (!moved && Math.abs(p.clientX - sx) < 8 && Math.abs(p.clientY - sy) < 8) return;
      moved = true;
      setDragged(true);
      hide();
      if (e.cancelable) e.preventDefault();
      const r = el.getBoundingClientRect();
      if (axis === "x" || axis === "both") el.style.setProperty("--dify-chatbot-bubble-button-left", Math.max(0, Math.min(p.clientX - dx, innerWidth - r.width)) + "px");
      if (axis === "y" || axis === "both") el.style.setProperty("--dify-chatbot-bubble-button-bottom", Math.max(0, Math.min(innerHeight - p.clientY - dy, innerHeight - r.height)) + "px");
      if (axis === "x" || axis === "both") el.style.right = "unset";
    };
    const end = () => {
      setTimeout(() => setDragged(false), 0);
      moved = false;
      document.removeEventListener("mousemove", move);
      document.removeEventListener("touchmove", move);
      document.removeEventListener("mouseup", end);
      document.removeEventListener("touchend", end);
    };
    const start = (e) => {
      const p = point(e);
      const r = el.getBoundingClientRect();
      sx = p.clientX;
      sy = p.clientY;
      dx = p.clientX - r.left;
      dy = r.bottom - p.clientY;
      document.addEventListener("mousemove", move);
      document.addEventListener("touchmove", move, { passive: false });
      document.addEventListener("mouseup", end);
      document.addEventListener("touchend", end);
    };
    el.addEventListener("mousedown", start);
    el.addEventListener("touchstart", start, { passive: true });
  }

  if (config && config.dynamicScript) embed();
  else if (document.readyState === "complete") embed();
  else window.addEventListener("load", embed);
})();

// Markdown of model answers: marked for the Markdown, KaTeX for $…$ and $$…$$ (and \(…\),
// \[…\]) as MathML, and DOMPurify over the whole result before any of it reaches the page. The
// answer is untrusted: no script, no event handler attribute, no javascript: or other foreign
// URL scheme, no style, no form control survives; links open in a new tab without an opener or
// referrer.
import DOMPurify from "dompurify";
import katex from "katex";
import { Marked } from "marked";

const marked = new Marked({ gfm: true, breaks: true, async: false });

function tex(src, display) {
  try {
    // MathML only: the HTML output needs inline style attributes the page's CSP refuses.
    return katex.renderToString(src, { displayMode: display, output: "mathml", throwOnError: false, trust: false, strict: "ignore", maxExpand: 500, maxSize: 50 });
  } catch {
    return "";
  }
}

marked.use({
  extensions: [
    {
      name: "blockMath",
      level: "block",
      start: (src) => src.indexOf("$$"),
      tokenizer(src) {
        const m = /^\$\$([\s\S]+?)\$\$(?:\n|$)/.exec(src);
        if (m) return { type: "blockMath", raw: m[0], text: m[1].trim() };
      },
      renderer: (tok) => "<p>" + tex(tok.text, true) + "</p>\n",
    },
    {
      name: "inlineMath",
      level: "inline",
      start: (src) => src.indexOf("$"),
      tokenizer(src) {
        let m = /^\$\$([^$]+?)\$\$/.exec(src);
        if (m) return { type: "inlineMath", raw: m[0], text: m[1].trim(), display: true };
        // $…$ with no space just inside the dollars, so prices such as "$5 and $6" stay text.
        m = /^\$(?!\s)((?:\\.|[^\\$\n])+?)(?<!\s)\$(?!\d)/.exec(src);
        if (m) return { type: "inlineMath", raw: m[0], text: m[1], display: false };
      },
      renderer: (tok) => tex(tok.text, tok.display),
    },
  ],
});

// Dify also renders \[…\] and \(…\) as math.
function dollars(src) {
  return src
    .replace(/\\\[([\s\S]+?)\\\]/g, (_, m) => "$$" + m + "$$")
    .replace(/\\\(([\s\S]+?)\\\)/g, (_, m) => "$" + m + "$");
}

const purifyConfig = {
  USE_PROFILES: { html: true, mathMl: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option", "iframe", "frame", "object", "embed", "link", "meta", "base", "svg", "template", "dialog"],
  FORBID_ATTR: ["style", "srcset", "action", "formaction", "xlink:href", "ping"],
  ALLOW_DATA_ATTR: false,
  ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|data:image\/(?:png|gif|jpe?g|webp);base64,|blob:|[/#?.]|[^:]*$)/i,
  RETURN_DOM_FRAGMENT: true,
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    if (node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  }
  if (node.tagName === "IMG") {
    node.setAttribute("loading", "lazy");
    node.setAttribute("referrerpolicy", "no-referrer");
  }
});

// render turns Markdown into a sanitized DocumentFragment.
export function render(src) {
  let html;
  try {
    html = marked.parse(dollars(String(src || "")));
  } catch {
    const div = document.createElement("div");
    div.textContent = String(src || "");
    html = div.innerHTML;
  }
  return DOMPurify.sanitize(html, purifyConfig);
}

// renderInto replaces el's content with the rendered Markdown.
export function renderInto(el, src) {
  el.replaceChildren(render(src));
}

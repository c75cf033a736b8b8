import { h } from "./dom.js";
import { t } from "./i18n.js";

// header is the site's title bar: icon, title, description.
export function siteHeader(site, extra) {
  const ic = site.icon_type === "image" || site.icon_type === "link" ? h("img", { class: "site-icon", src: site.icon_url || "", alt: "" }) : h("span", { class: "site-icon", "aria-hidden": "true" }, site.icon || "🤖");
  if (site.icon_background && ic.tagName === "SPAN") ic.style.background = site.icon_background;
  return h("header", { class: "site-header" }, ic, h("div", { class: "site-titles" }, h("h1", {}, site.title || ""), site.description ? h("p", { class: "muted" }, site.description) : null), extra);
}

// footer is the copyright, privacy policy and custom disclaimer.
export function siteFooter(site) {
  const parts = [];
  if (site.copyright) parts.push(h("span", {}, "© " + site.copyright));
  if (site.privacy_policy && /^https?:\/\//i.test(site.privacy_policy)) parts.push(h("a", { href: site.privacy_policy, target: "_blank", rel: "noopener noreferrer" }, t("privacyPolicy")));
  if (site.custom_disclaimer) parts.push(h("span", { class: "disclaimer" }, site.custom_disclaimer));
  return parts.length ? h("footer", { class: "site-footer" }, parts) : null;
}


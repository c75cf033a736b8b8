// Builds web/dist from web/src: the pages' script and style sheet under dist/assets with content
// hashes in their names, and dist/embed.min.js (the chat bubble, a fixed name). The output is the
// same bytes for the same sources and package-lock.json (no timestamps, no absolute paths), so
// `make check-generated` can rebuild it and compare. dist/manifest.json tells the server the
// hashed names.
import { build } from "esbuild";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename } from "node:path";

const dist = new URL("./dist/", import.meta.url).pathname;
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist + "assets", { recursive: true });

const common = {
  bundle: true,
  minify: true,
  legalComments: "eof",
  target: ["chrome109", "firefox115", "safari16"],
  charset: "utf8",
  logLevel: "warning",
  sourcemap: false,
  metafile: true,
  absWorkingDir: new URL(".", import.meta.url).pathname,
};

// The pages: one script and one style sheet for every kind of page.
const pages = await build({
  ...common,
  entryPoints: { app: "src/main.js", style: "src/style.css" },
  outdir: dist + "assets",
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  format: "esm",
});

// The bubble: runs on other sites' pages, so it is a self-contained script with a fixed name.
await build({
  ...common,
  entryPoints: ["src/embed.js"],
  outfile: dist + "embed.min.js",
  format: "iife",
  legalComments: "none",
});

const manifest = {};
for (const [out, meta] of Object.entries(pages.metafile.outputs)) {
  if (!meta.entryPoint) continue;
  const name = basename(meta.entryPoint).replace(/\.(js|css)$/, "") + (out.endsWith(".css") ? ".css" : ".js");
  manifest[name === "main.js" ? "app.js" : name] = basename(out);
}
const sorted = Object.fromEntries(Object.entries(manifest).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(dist + "manifest.json", JSON.stringify(sorted, null, 2) + "\n");

// Build the console into OUTDIR (argv[2], default ./dist): one bundled, minified script
// (esbuild strips the TypeScript types), the page and its stylesheet. No network access:
// everything the page needs is in the output folder.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, "dist"));
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, "src/main.ts")],
  bundle: true,
  minify: true,
  sourcemap: false,
  target: ["es2020"],
  format: "iife",
  outfile: join(out, "app.js"),
  logLevel: "warning",
});
for (const file of ["index.html", "style.css"]) copyFileSync(join(here, "src", file), join(out, file));
console.log(out);

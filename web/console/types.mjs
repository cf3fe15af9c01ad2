// The console's API types: src/openapi/<service>.ts from each service's OpenAPI document
// (docs/openapi/<service>.json, written by deploy/openapi.py), by openapi-typescript.
// src/types.ts names the shapes the pages read after them.
//   node types.mjs [DOCS] [OUT]          write OUT (defaults: ../../docs/openapi, src/openapi)
//   node types.mjs --check [DOCS] [OUT]  write nothing; exit 1 when OUT is not what DOCS give
// `make openapi` runs deploy/openapi.py and then this; the console's build checks.
import openapiTS, { astToString } from "openapi-typescript";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const check = args[0] === "--check";
if (check) args.shift();
const docs = resolve(args[0] ?? join(here, "../../docs/openapi"));
const out = resolve(args[1] ?? join(here, "src/openapi"));

/** One module's text: the document's paths, components and operations as types. */
async function generate(file) {
  const ast = await openapiTS(pathToFileURL(join(docs, file)), { alphabetize: true });
  const banner =
    `// Generated from docs/openapi/${file} by web/console/types.mjs (openapi-typescript): do\n` +
    "// not edit. After changing a service's HTTP models, run `make openapi`.\n";
  return banner + astToString(ast);
}

const files = readdirSync(docs).filter((f) => f.endsWith(".json")).sort();
if (!files.length) throw new Error(`no OpenAPI document in ${docs}`);
const wanted = new Map();
for (const file of files) wanted.set(`${basename(file, ".json")}.ts`, await generate(file));

const present = existsSync(out) ? readdirSync(out).filter((f) => f.endsWith(".ts")) : [];
if (check) {
  const stale = [...new Set([...wanted.keys(), ...present])]
    .sort()
    .filter((f) => !wanted.has(f) || !present.includes(f) || readFileSync(join(out, f), "utf8") !== wanted.get(f));
  if (stale.length) {
    console.error(`${out}: ${stale.join(", ")} not what ${docs} gives: run \`make openapi\``);
    process.exit(1);
  }
} else {
  mkdirSync(out, { recursive: true });
  for (const f of present) if (!wanted.has(f)) rmSync(join(out, f)); // a service gone
  for (const [f, text] of wanted) writeFileSync(join(out, f), text);
  console.error(`wrote ${wanted.size} modules into ${out}`);
}

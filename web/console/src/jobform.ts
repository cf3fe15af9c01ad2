// A new job from a form built from the job request's JSON Schema (GET /api/jobs/schema):
// one field per plain setting of the model (per architecture), training, aggregation and
// sharding blocks, empty meaning the schema's default; nested settings (a layer graph, a
// learning-rate schedule) go in a JSON box merged over the form. The server checks the job
// as it is typed (POST /api/jobs?dry_run=true: every check a creation makes, nothing
// created) and the problems show beside the form.
import { all, explain, get, post } from "./api";
import { cmd, h, put } from "./dom";
import { Dataset, JobAccepted, JobChecked, Peer } from "./types";
import type { View } from "./view";

/** The part of JSON Schema the form reads. Hand-written: `GET /api/jobs/schema` answers
 * the job request's JSON Schema, which the OpenAPI document types as any object. */
interface Schema {
  type?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  $ref?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  title?: string;
  discriminator?: { propertyName: string; mapping: Record<string, string> };
}

/** What a field reads: a plain value, or a comma-separated list of numbers. */
type Kind = "integer" | "number" | "string" | "boolean" | "enum" | "list";
interface Plain {
  kind: Kind;
  options?: unknown[];
  item?: "integer" | "number" | "string";
  schema: Schema;
}

const SECTIONS = ["training", "aggregation", "sharding"] as const;
/** Let the dry run wait until typing pauses. */
const CHECK_AFTER_MS = 400;

function resolver(root: Schema & { $defs?: Record<string, Schema> }): (s: Schema) => Schema {
  const resolve = (s: Schema): Schema => (s.$ref ? resolve(root.$defs?.[s.$ref.split("/").pop()!] ?? {}) : s);
  return resolve;
}

/** The plain kind of a property (a nullable one as its non-null branch), or null for a
 * nested one (left to the JSON box). */
function plain(s: Schema, resolve: (s: Schema) => Schema): Plain | null {
  const r = resolve(s);
  const branches = (r.anyOf ?? []).map(resolve).filter((b) => b.type !== "null");
  const one = branches.length === 1 ? { ...branches[0], default: r.default ?? branches[0].default } : r;
  if (one.enum) return { kind: "enum", options: one.enum, schema: one };
  if (one.type === "integer" || one.type === "number" || one.type === "string" || one.type === "boolean") return { kind: one.type, schema: one };
  const item = one.type === "array" && one.items ? resolve(one.items).type : undefined;
  if (item === "integer" || item === "number" || item === "string") return { kind: "list", item, schema: one };
  return null;
}

function input(name: string, p: Plain): HTMLInputElement | HTMLSelectElement {
  const s = p.schema;
  const shown = s.default === undefined || s.default === null ? "" : Array.isArray(s.default) ? s.default.join(",") : String(s.default);
  if (p.kind === "enum" || p.kind === "boolean") {
    const options = p.kind === "boolean" ? [true, false] : p.options!;
    return h(
      "select",
      { name },
      h("option", { value: "" }, shown ? `(default: ${shown})` : "(default)"),
      ...options.map((o) => h("option", { value: String(o) }, String(o))),
    ) as HTMLSelectElement;
  }
  const numeric = p.kind === "integer" || p.kind === "number";
  return h("input", {
    name,
    type: numeric ? "number" : "text",
    step: p.kind === "integer" ? "1" : numeric ? "any" : null,
    min: s.minimum ?? null,
    max: s.maximum ?? null,
    placeholder: shown ? `default: ${shown}` : p.kind === "list" ? "comma-separated" : "",
  }) as HTMLInputElement;
}

/** A field's value as the request wants it; undefined when empty (the default). */
function valueOf(el: HTMLInputElement | HTMLSelectElement, p: Plain): unknown {
  const raw = el.value.trim();
  if (raw === "") return undefined;
  if (p.kind === "integer" || p.kind === "number") return Number(raw);
  if (p.kind === "boolean") return raw === "true";
  if (p.kind === "enum") return p.options!.find((o) => String(o) === raw);
  if (p.kind === "list") return raw.split(",").map((x) => x.trim()).filter(Boolean).map((x) => (p.item === "string" ? x : Number(x)));
  return raw;
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = v && typeof v === "object" && !Array.isArray(v) && b && typeof b === "object" && !Array.isArray(b) ? merge(b as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

export const newJobView: View = async (root) => {
  const [schema, datasets, peers] = await Promise.all([
    get<Schema & { $defs?: Record<string, Schema> }>("/api/jobs/schema"),
    all<Dataset>("/api/datasets"),
    all<Peer>("/api/registry/peers").catch(() => [] as Peer[]),
  ]);
  const resolve = resolver(schema);
  const props = schema.properties ?? {};
  const fields: Array<{ path: string[]; el: HTMLInputElement | HTMLSelectElement; p: Plain; arch?: string }> = [];
  const label = (text: string, el: HTMLElement): HTMLElement => h("label", {}, h("span", {}, text), el);

  const name = h("input", { name: "name", required: true, maxlength: 200, "data-testid": "job-name" }) as HTMLInputElement;
  const usable = datasets.filter((d) => d.status === "validated");
  const dataset = h(
    "select",
    { name: "dataset_id", "data-testid": "job-dataset" },
    ...usable.map((d) => h("option", { value: d.id }, `${d.name} (${d.rows ?? "?"} rows, …${d.id.slice(-6)})`)),
  ) as HTMLSelectElement;
  const count = h("input", { name: "count", type: "number", min: 1, value: 2, "data-testid": "job-count" }) as HTMLInputElement;
  const picks = peers.map((p) => ({ p, box: h("input", { type: "checkbox", value: p.peer_id }) as HTMLInputElement }));
  const initFrom = h("input", { name: "init_from", placeholder: "JOB or JOB:vR (optional)" }) as HTMLInputElement;

  // The model: its architecture (the schema's discriminator), then that one's fields.
  const model = resolve(props.model ?? {});
  const archs = Object.keys(model.discriminator?.mapping ?? { mlp: "" });
  const arch = h("select", { name: "model.arch", "data-testid": "job-arch" }, ...archs.map((a) => h("option", { value: a, selected: a === "mlp" }, a))) as HTMLSelectElement;
  const modelBox = h("fieldset", {}, h("legend", {}, "model"), label("arch", arch));
  for (const a of archs) {
    const spec = resolve({ $ref: model.discriminator?.mapping[a] });
    for (const [key, s] of Object.entries(spec.properties ?? {})) {
      const p = key === "arch" ? null : plain(s, resolve);
      if (!p) continue;
      const el = input(`model.${key}`, p);
      const wrap = label(key, el);
      wrap.dataset.arch = a;
      fields.push({ path: ["model", key], el, p, arch: a });
      modelBox.append(wrap);
    }
  }
  const showArch = (): void =>
    modelBox.querySelectorAll<HTMLElement>("label[data-arch]").forEach((l) => (l.hidden = l.dataset.arch !== arch.value));
  arch.addEventListener("change", showArch);
  showArch();

  const boxes = SECTIONS.map((section) => {
    const box = h("fieldset", {}, h("legend", {}, section));
    for (const [key, s] of Object.entries(resolve(props[section] ?? {}).properties ?? {})) {
      const p = plain(s, resolve);
      if (!p) continue;
      const el = input(`${section}.${key}`, p);
      fields.push({ path: [section, key], el, p });
      box.append(label(key, el));
    }
    return box;
  });
  const extra = h("textarea", { name: "extra", placeholder: '{"model": {"hidden": [64, 32]}, "training": {"lr_schedule": {"kind": "cosine"}}}', "data-testid": "job-extra" }) as HTMLTextAreaElement;
  const verdict = h("p", { "data-testid": "job-check" });
  const create = h("button", { type: "submit", "data-testid": "job-create" }, "Create job") as HTMLButtonElement;

  /** The request the form describes (throws on a JSON box that is not an object). */
  const spec = (): Record<string, unknown> => {
    const out: Record<string, unknown> = { name: name.value.trim(), dataset_id: dataset.value, model: { arch: arch.value } };
    const chosen = picks.filter((x) => x.box.checked).map((x) => x.p.peer_id);
    if (chosen.length) out.peers = chosen;
    else out.selection = { count: Number(count.value) || 1 };
    for (const f of fields) {
      if (f.arch !== undefined && f.arch !== arch.value) continue;
      const v = valueOf(f.el, f.p);
      if (v === undefined) continue;
      const [section, key] = f.path;
      out[section] = { ...((out[section] as Record<string, unknown>) ?? {}), [key]: v };
    }
    const from = initFrom.value.trim();
    if (from) {
      const [job, version] = from.split(":");
      out.init_from = version ? { job_id: job, version: Number(version.replace(/^v/, "")) } : { job_id: job };
    }
    if (extra.value.trim()) {
      const more = JSON.parse(extra.value);
      if (!more || typeof more !== "object" || Array.isArray(more)) throw new Error("the JSON box must hold an object");
      return merge(out, more);
    }
    return out;
  };

  let checking = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = async (): Promise<void> => {
    const mine = ++checking;
    let body: Record<string, unknown>;
    try {
      body = spec();
    } catch (e) {
      verdict.className = "error";
      verdict.textContent = String((e as Error).message);
      return;
    }
    if (!body.name || !body.dataset_id) {
      verdict.className = "muted";
      verdict.textContent = "a name and a dataset, and the server checks the rest as you type";
      return;
    }
    try {
      const ok = await post<JobChecked>("/api/jobs?dry_run=true", body);
      if (mine !== checking) return;
      verdict.className = "ok";
      verdict.textContent = `valid: it would run on ${ok.peers.length} peer(s)`;
    } catch (e) {
      if (mine !== checking) return;
      verdict.className = "error";
      verdict.textContent = explain(e);
    }
  };
  const form = h(
    "form",
    { class: "panel", "data-testid": "job-form" },
    label("name", name),
    label("dataset", dataset),
    h(
      "fieldset",
      {},
      h("legend", {}, "peers: these, or any N usable ones"),
      label("N", count),
      ...picks.map(({ p, box }) => h("label", {}, h("span", {}, `${p.name} (${p.status})`), box)),
    ),
    label("start from", initFrom),
    modelBox,
    ...boxes,
    label("more settings (JSON, merged over the fields)", extra),
    h("p", { class: "actions" }, create),
    verdict,
  );
  form.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => void check(), CHECK_AFTER_MS);
  });
  form.addEventListener("change", () => void check());
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    create.disabled = true;
    try {
      const made = await post<JobAccepted>("/api/jobs", spec());
      location.hash = `#/jobs/${made.job_id}`;
    } catch (e) {
      verdict.className = "error";
      verdict.textContent = explain(e);
      create.disabled = false;
    }
  });
  put(
    root,
    h("h1", {}, "New job"),
    usable.length ? form : h("p", { class: "muted" }, "No validated dataset yet: ", h("a", { href: "#/datasets/new" }, "upload one"), " first."),
    h("p", { class: "muted" }, "The same from a terminal: ", cmd("peertrain job create --dataset <id> --count 2 --dry-run"), "; ", cmd("peertrain job schema"), " prints the schema this form is built from."),
  );
};

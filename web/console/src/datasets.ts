// Datasets: the list, an upload with its progress, and one dataset's schema, class counts
// and first rows.
import { all, ApiError, bearer, explain, get } from "./api";
import { cmd, h, put, stateEl, table, when } from "./dom";
import { Dataset, DatasetAccepted, ErrorResponse, Preview } from "./types";
import type { View } from "./view";

export const datasetsView: View = async (root) => {
  const found = await all<Dataset>("/api/datasets");
  put(root, 
    h("h1", {}, "Datasets"),
    h("p", { class: "actions" }, h("a", { href: "#/datasets/new", "data-testid": "upload-link" }, "Upload a dataset")),
    found.length
      ? table(
          ["name", "status", "kind", "rows", "classes", "uploaded"],
          found.map((d) => [h("a", { href: `#/datasets/${d.id}` }, d.name), stateEl(d.status), d.kind ?? "–", d.rows ?? "–", d.classes?.length ?? "–", when(d.created_at)]),
          { "data-testid": "datasets" },
        )
      : h("p", { class: "muted", "data-testid": "datasets-empty" }, "No datasets yet: ", h("a", { href: "#/datasets/new" }, "upload one"), ", or run ", cmd("peertrain dataset upload data.csv --wait"), "."),
  );
};

/** Rows past which a table scrolls in a box of its own (a 31-column schema). */
const OPEN_UP_TO = 12;

/** A table in a box that scrolls sideways, and downwards when it is long (its head stays). */
const tall = (head: string[], rows: Parameters<typeof table>[1], attrs: Parameters<typeof table>[2]): HTMLElement =>
  rows.length > OPEN_UP_TO ? h("div", { class: "scroll" }, table(head, rows, attrs, false)) : table(head, rows, attrs);

export const datasetView: View = async (root, [id]) => {
  const d = await get<Dataset>(`/api/datasets/${id}`);
  const preview = d.status === "validated" ? await get<Preview>(`/api/datasets/${id}/preview`).catch(() => null) : null;
  const most = Math.max(1, ...(d.class_counts ?? []));
  put(root, 
    h("h1", {}, d.name, " ", stateEl(d.status)),
    h(
      "p",
      {},
      `${d.filename} · ${d.size.toLocaleString()} bytes · ${d.kind ?? "–"} · ${d.rows ?? "–"} rows (${d.train_rows ?? "–"} train, ${d.holdout_rows ?? "–"} holdout)`,
      d.input_shape ? ` · input ${d.input_shape.join("×")}` : "",
      d.label_column ? ` · label column ${d.label_column}` : "",
    ),
    d.error ? h("p", { class: "error" }, `${d.error.code ?? "rejected"}: ${d.error.message ?? ""}`) : null,
    h("h2", {}, "Schema"),
    d.schema
      ? tall(
          ["column", "type", "missing", "details"],
          d.schema.map((c) => {
            const { name, type, missing, ...rest } = c;
            return [name, type, missing ?? 0, h("code", {}, JSON.stringify(rest))];
          }),
          { "data-testid": "schema" },
        )
      : h("p", { class: "muted" }, "–"),
    h("h2", {}, "Class counts"),
    d.classes && d.class_counts
      ? table(
          ["class", "rows", ""],
          d.classes.map((c, i) => [c, d.class_counts![i], h("span", { class: "bar", style: `width:${(200 * d.class_counts![i]) / most}px` })]),
          { "data-testid": "class-counts" },
        )
      : h("p", { class: "muted" }, "–"),
    h("h2", {}, "Preview"),
    preview ? tall(preview.columns, preview.rows.map((r) => r.map((c) => (c === null ? "" : String(c)))), { "data-testid": "preview" }) : h("p", { class: "muted" }, "–"),
  );
};

/** POST the form to /api/datasets with XMLHttpRequest (fetch reports no upload progress);
 * resolves with the new dataset's id. */
function send(form: FormData, token: string, progress: (sent: number, total: number) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/datasets");
    xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    xhr.upload.addEventListener("progress", (ev) => ev.lengthComputable && progress(ev.loaded, ev.total));
    xhr.addEventListener("error", () => reject(new Error("the upload failed (network)")));
    xhr.addEventListener("load", () => {
      // the upload's answer (201) or the one error shape, or neither (a proxy's page)
      let body: Partial<DatasetAccepted & ErrorResponse> = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status >= 200 && xhr.status < 300 && body.dataset_id) resolve(body.dataset_id);
      else reject(new ApiError(xhr.status, body.error?.code ?? `http_${xhr.status}`, body.error?.message ?? xhr.statusText, body.error?.detail ?? null));
    });
    xhr.send(form);
  });
}

/** Upload a .csv, .csv.gz or .zip with the fields of `peertrain dataset upload`; the bar
 * shows the bytes sent, then the page waits for validation and opens the dataset. */
export const uploadView: View = async (root, _params, alive) => {
  const field = (label: string, input: HTMLElement): HTMLElement => h("label", {}, h("span", {}, label), input);
  const file = h("input", { type: "file", name: "file", required: true, accept: ".csv,.gz,.zip" }) as HTMLInputElement;
  const name = h("input", { name: "name", maxlength: 200, placeholder: "default: the file name" }) as HTMLInputElement;
  const label = h("input", { name: "label_column", placeholder: "default: the last column" }) as HTMLInputElement;
  const holdout = h("input", { name: "holdout_fraction", type: "number", step: "0.01", min: "0.01", max: "0.5", placeholder: "0.1" }) as HTMLInputElement;
  const size = h("input", { name: "image_size", pattern: "[0-9]+x[0-9]+", placeholder: "images: WIDTHxHEIGHT" }) as HTMLInputElement;
  const bar = h("progress", { max: 1, value: 0, "data-testid": "upload-progress" }) as HTMLProgressElement;
  const status = h("p", { "data-testid": "upload-status" });
  const submit = h("button", { type: "submit", "data-testid": "upload" }, "Upload") as HTMLButtonElement;
  const form = h(
    "form",
    { class: "panel", "data-testid": "upload-form" },
    field("file (.csv, .csv.gz or .zip of images)", file),
    field("name", name),
    field("label column", label),
    field("holdout fraction", holdout),
    field("image size", size),
    h("p", { class: "actions" }, submit, bar),
    status,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const chosen = file.files?.[0];
    if (!chosen) return;
    const data = new FormData();
    for (const input of [name, label, holdout, size]) if (input.value.trim()) data.append(input.name, input.value.trim());
    data.append("file", chosen, chosen.name); // last: the fields arrive before the bytes
    submit.disabled = true;
    status.className = "";
    try {
      const id = await send(data, await bearer(), (sent, total) => {
        bar.max = total;
        bar.value = sent;
        status.textContent = `${sent.toLocaleString()} of ${total.toLocaleString()} bytes sent`;
      });
      status.textContent = "uploaded; validating…";
      for (;;) {
        const d = await get<Dataset>(`/api/datasets/${id}`);
        if (!alive()) return;
        if (d.status !== "validating") break;
        await new Promise((r) => setTimeout(r, 500));
      }
      location.hash = `#/datasets/${id}`;
    } catch (e) {
      status.className = "error";
      status.textContent = explain(e);
      submit.disabled = false;
    }
  });
  put(root, h("h1", {}, "Upload a dataset"), form);
};

// Datasets: the list, and one dataset's schema, class counts and first rows.
import { all, get } from "./api";
import { h, put, stateEl, table, when } from "./dom";
import { Dataset, Preview } from "./types";
import type { View } from "./main";

export const datasetsView: View = async (root) => {
  const found = await all<Dataset>("/api/datasets");
  put(root, 
    h("h1", {}, "Datasets"),
    found.length
      ? table(
          ["name", "status", "kind", "rows", "classes", "uploaded"],
          found.map((d) => [h("a", { href: `#/datasets/${d.id}` }, d.name), stateEl(d.status), d.kind ?? "–", d.rows ?? "–", d.classes?.length ?? "–", when(d.created_at)]),
          { "data-testid": "datasets" },
        )
      : h("p", { class: "muted" }, "No datasets yet: `peertrain dataset upload data.csv`."),
  );
};

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
      ? table(
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
    preview ? table(preview.columns, preview.rows.map((r) => r.map((c) => (c === null ? "" : String(c)))), { "data-testid": "preview" }) : h("p", { class: "muted" }, "–"),
  );
};

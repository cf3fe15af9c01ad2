// A job's model: its parameter count and every layer (node) with its op, output shape and
// parameters, from GET /api/jobs/{id}/model. Built once per page (it never changes), so
// the table's open/closed state and scroll position survive the job page's polling.
import { ApiError, get } from "./api";
import { h, table } from "./dom";
import { ModelSummary } from "./types";

/** Layer tables up to this many rows start open; longer ones (a ResNet) start closed. */
const OPEN_UP_TO = 12;

export async function architecture(jobId: string): Promise<HTMLElement> {
  let m: ModelSummary;
  try {
    m = await get<ModelSummary>(`/api/jobs/${jobId}/model`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) throw e;
    return h("section", { "data-testid": "architecture" }, h("h2", {}, "Architecture"), h("p", { class: "error" }, (e as Error).message));
  }
  const kind = m.name ? `${m.arch} ${m.name}` : m.arch;
  const layers = m.layers.filter((l) => l.module !== null).length;
  const rows = m.layers.map((l) => [
    h("code", { title: l.module ?? "" }, l.name),
    l.op,
    h("code", {}, l.output),
    l.parameters ? l.parameters.toLocaleString() : "–",
  ]);
  return h(
    "section",
    { "data-testid": "architecture", "data-parameters": m.parameters, "data-layers": m.layers.length },
    h("h2", {}, "Architecture"),
    h(
      "p",
      { "data-testid": "architecture-summary" },
      `${kind} · ${m.parameters.toLocaleString()} parameters · ${m.layers.length} nodes (${layers} with state) · `,
      `input [${m.input_shape.join(", ")}] · ${m.activations.toLocaleString()} activations per sample`,
    ),
    h(
      "details",
      { open: m.layers.length <= OPEN_UP_TO, "data-testid": "architecture-details" },
      h("summary", {}, `Layers (${m.layers.length})`),
      h("div", { class: "scroll" }, table(["name", "op", "output shape", "parameters"], rows, { "data-testid": "architecture-layers" }, false)),
    ),
  );
}

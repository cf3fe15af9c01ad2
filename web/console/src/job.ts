// One job: cancel and rerun, live holdout curves, each peer's progress and training
// curves, failed tasks, lineage, config, model download, the model's architecture; and
// the job's events, page by page.
import { all, ApiError, explain, get, post, request } from "./api";
import { architecture } from "./architecture";
import { lineChart, Series } from "./chart";
import { fmt, h, put, stateEl, table, when } from "./dom";
import { FINISHED, JobAccepted, JobDetail, JobEvent, JobMetrics, JobSummary, Page, Peer, PeerEpoch } from "./types";
import type { View } from "./view";

/** The creation body of a job like `job`: same dataset, peers, model, training,
 * aggregation, sharding and starting model (as `peertrain job rerun`, jobspec.rerun_spec). */
export function rerunSpec(job: JobDetail, name: string): Record<string, unknown> {
  const spec: Record<string, unknown> = {
    name,
    dataset_id: job.dataset_id,
    peers: [...job.peers],
    model: job.model,
    training: job.training,
    aggregation: job.aggregation,
    // the sharding seed is the training seed: the request has no field for it
    sharding: { strategy: job.sharding.strategy, alpha: job.sharding.alpha },
  };
  if (job.init_from) spec.init_from = { job_id: job.init_from.job_id, version: job.init_from.version };
  if (job.init_weights) spec.init_weights = job.init_weights.weights_id;
  return spec;
}

/** Cancel (while the job runs) and rerun (a new job of the same spec, under a name of the
 * user's choosing), built once: polling does not redraw the name being typed. */
function actions(jobId: string, current: () => JobDetail | null): { el: HTMLElement; update: (job: JobDetail) => void } {
  const msg = h("span", { class: "error", "data-testid": "action-error" });
  const cancel = h("button", { class: "danger", "data-testid": "cancel", disabled: true }, "Cancel job") as HTMLButtonElement;
  const name = h("input", { name: "rerun-name", "aria-label": "name of the rerun", "data-testid": "rerun-name", size: 24 }) as HTMLInputElement;
  const rerun = h("button", { class: "secondary", "data-testid": "rerun", disabled: true }, "Rerun as") as HTMLButtonElement;
  cancel.addEventListener("click", async () => {
    if (!confirm("Cancel this job? Its peers stop their tasks.")) return;
    msg.textContent = "";
    cancel.disabled = true;
    try {
      await post(`/api/jobs/${jobId}/cancel`);
    } catch (e) {
      msg.textContent = explain(e);
      cancel.disabled = false;
    }
  });
  rerun.addEventListener("click", async () => {
    const job = current();
    if (!job) return;
    msg.textContent = "";
    rerun.disabled = true;
    try {
      const made = await post<JobAccepted>("/api/jobs", rerunSpec(job, name.value.trim() || `${job.name}-rerun`));
      location.hash = `#/jobs/${made.job_id}`;
    } catch (e) {
      msg.textContent = explain(e);
    } finally {
      rerun.disabled = false;
    }
  });
  const el = h("p", { class: "actions" }, cancel, rerun, name, h("a", { href: `#/jobs/${jobId}/events`, "data-testid": "events-link" }, "Events"), msg);
  return {
    el,
    update: (job) => {
      cancel.disabled = FINISHED.has(job.state);
      rerun.disabled = false;
      if (!name.value) name.value = `${job.name}-rerun`;
    },
  };
}

/** Training loss and accuracy per peer, epoch by epoch: x is the round, an epoch e of E
 * in round r at r - 1 + e/E. */
/** A round's update bytes, and how many times fewer than float32 when compressed. */
function bytesUp(r: JobMetrics["rounds"][number]): string {
  if (r.bytes_up == null) return "–";
  const dense = r.bytes_up_dense;
  const ratio = dense != null && r.bytes_up > 0 && dense > 1.05 * r.bytes_up ? ` (${(dense / r.bytes_up).toFixed(1)}× fewer)` : "";
  return r.bytes_up.toLocaleString() + ratio;
}

function peerCurves(metrics: JobMetrics, label: (peerId: string) => string): HTMLElement | null {
  if (metrics.peers.length === 0) return null;
  const byPeer = new Map<string, PeerEpoch[]>();
  for (const p of metrics.peers) byPeer.set(p.peer_id, [...(byPeer.get(p.peer_id) ?? []), p]);
  const curve = (pick: (p: PeerEpoch) => number | null): Series[] =>
    [...byPeer].map(([peerId, epochs]) => ({
      name: label(peerId),
      points: epochs
        .filter((p) => pick(p) !== null)
        .map((p) => [p.round - 1 + p.epoch / p.epochs, pick(p)!] as [number, number])
        .sort((a, b) => a[0] - b[0]),
    }));
  return h(
    "div",
    { class: "charts" },
    lineChart("training loss per peer", curve((p) => p.loss), { testid: "peer-loss", xLabel: "round", yMin: 0 }),
    lineChart("training accuracy per peer", curve((p) => p.accuracy), { testid: "peer-accuracy", xLabel: "round", yMin: 0, yMax: 1 }),
  );
}

/** Jobs started from one of this job's versions (`init_from`): among the jobs created
 * after it (the newest 50), the ones whose detail names it. Looked up once per page. */
async function startedFrom(job: JobDetail): Promise<Array<{ job: JobDetail; version: number }>> {
  const since = job.created_at ? Date.parse(job.created_at) : 0;
  const later = (await all<JobSummary>("/api/jobs"))
    .filter((j) => j.job_id !== job.job_id && j.created_at !== null && Date.parse(j.created_at) >= since)
    .slice(0, 50);
  const found = await Promise.all(later.map((j) => get<JobDetail>(`/api/jobs/${j.job_id}`).catch(() => null)));
  return found.filter((d): d is JobDetail => d?.init_from?.job_id === job.job_id).map((d) => ({ job: d, version: d.init_from!.version }));
}

/** Dataset → (the version it started from) → this job → its versions → jobs started from them. */
function lineage(job: JobDetail, metrics: JobMetrics, children: Array<{ job: JobDetail; version: number }>): HTMLElement {
  const versions = [...(metrics.initial ? [0] : []), ...metrics.rounds.map((r) => r.round)];
  return h(
    "ul",
    { class: "lineage", "data-testid": "lineage" },
    h("li", {}, "dataset ", h("a", { href: `#/datasets/${job.dataset_id}` }, job.dataset_id)),
    job.init_from
      ? h("li", {}, "started from ", h("a", { href: `#/jobs/${job.init_from.job_id}` }, `job …${job.init_from.job_id.slice(-8)}`), ` version ${job.init_from.version}`)
      : job.init_weights
        ? h("li", {}, `started from uploaded weights ${job.init_weights.weights_id}`)
        : h("li", {}, "started from fresh weights"),
    h(
      "li",
      {},
      `versions: ${versions.length ? versions.map((v) => `v${v}`).join(", ") : "none yet"}`,
      job.final_version !== null ? ` (final: v${job.final_version})` : "",
    ),
    h(
      "li",
      { "data-testid": "lineage-children" },
      "jobs started from it: ",
      ...(children.length
        ? children.flatMap(({ job: c, version }, i) => [i ? ", " : "", h("a", { href: `#/jobs/${c.job_id}` }, c.name), ` (from v${version})`])
        : ["none"]),
    ),
  );
}

/** A model file: the final one, or version `version` (a number, or "best"); its bytes
 * are checked against the server's SHA-256 (`X-Content-SHA256`) before it is saved. */
async function download(jobId: string, format: "pt" | "safetensors", status: HTMLElement, version?: number | "best"): Promise<void> {
  status.textContent = "downloading…";
  try {
    const path = version === undefined ? `/api/models/${jobId}/final` : `/api/models/${jobId}/versions/${version}`;
    const r = await request(`${path}?format=${format}`);
    const blob = await r.blob();
    const expected = r.headers.get("X-Content-SHA256");
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await blob.arrayBuffer()));
    const actual = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    if (expected && expected !== actual) throw new Error(`the download is corrupt (sha256 ${actual}, the server says ${expected}); nothing saved`);
    const got = r.headers.get("X-Model-Version");
    const name = version === undefined ? `${jobId}.${format}` : `${jobId}-v${got ?? version}.${format}`;
    const url = URL.createObjectURL(blob);
    const a = h("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    status.textContent = `${name}: ${blob.size.toLocaleString()} bytes, sha256 checked`;
  } catch (e) {
    status.textContent = (e as Error).message;
  }
}

function peerRows(job: JobDetail, metrics: JobMetrics, names: Map<string, string>): Array<Array<string | number | HTMLElement>> {
  const latest = new Map<string, PeerEpoch>();
  for (const p of metrics.peers) {
    const seen = latest.get(p.peer_id);
    if (!seen || p.round > seen.round || (p.round === seen.round && p.epoch >= seen.epoch)) latest.set(p.peer_id, p);
  }
  const current = job.round?.round;
  return job.peers.map((peerId, shard) => {
    const task = job.tasks.find((t) => t.peer_id === peerId && t.round === current);
    const p = latest.get(peerId);
    return [
      // (ids are UUIDv7: their first characters are a timestamp, their last ones differ)
      h("span", { title: peerId }, names.get(peerId) ?? "", " ", h("code", {}, `…${peerId.slice(-8)}`)),
      shard,
      task ? task.state : "–",
      task?.device ?? "–",
      p ? `round ${p.round}, epoch ${p.epoch}/${p.epochs}` : "–",
      fmt(p?.loss),
      fmt(p?.accuracy),
    ];
  });
}

export const jobView: View = async (root, [jobId], alive) => {
  let config: unknown = null;
  // Peer names, for the peers this user may see (others show their id only).
  const names = new Map((await all<Peer>("/api/registry/peers").catch(() => [] as Peer[])).map((p) => [p.peer_id, p.name]));
  const dlStatus = h("span", { class: "muted", "data-testid": "download-status" });
  let latest: JobDetail | null = null;
  let children: Array<{ job: JobDetail; version: number }> | null = null;
  const acts = actions(jobId, () => latest);
  // What polling redraws (the head above the actions, the rest below them), and the
  // architecture below it all, drawn once.
  const head = h("div");
  const live = h("div");
  put(root, head, acts.el, live, await architecture(jobId));
  const label = (peerId: string): string => `${names.get(peerId) ?? "peer"} …${peerId.slice(-6)}`;
  const tick = async (): Promise<boolean> => {
    const [job, metrics] = await Promise.all([
      get<JobDetail>(`/api/jobs/${jobId}`),
      get<JobMetrics>(`/api/jobs/${jobId}/metrics`),
    ]);
    // config_key is set once the data is sharded and config.json written: asking before
    // would only earn a 404 (which the browser logs as an error).
    if (config === null && job.config_key !== null) {
      config = await get<unknown>(`/api/jobs/${jobId}/config`).catch((e: ApiError) => (e.status === 404 ? null : Promise.reject(e)));
    }
    children ??= await startedFrom(job).catch(() => []);
    if (!alive()) return false;
    latest = job;
    acts.update(job);
    const initial = metrics.initial ? ([[0, metrics.initial.loss, metrics.initial.accuracy]] as const) : [];
    const pts = [...initial, ...metrics.rounds.map((r) => [r.round, r.loss, r.accuracy] as const)];
    const failed = job.tasks.filter((t) => t.state === "failed" || t.state === "rejected");
    const finalReady = job.final_version !== null;
    const buttons = [
      ...(["pt", "safetensors"] as const).map((f) =>
        h("button", { disabled: !finalReady, "data-testid": `download-${f}`, onclick: () => download(jobId, f, dlStatus) }, `Download ${f}`),
      ),
      // any job's best version so far: also of a cancelled or failed job
      h("button", { disabled: !metrics.rounds.length, "data-testid": "download-best", onclick: () => download(jobId, "pt", dlStatus, "best") }, "Download best .pt"),
    ];
    put(
      head,
      h("h1", {}, job.name, " ", stateEl(job.state)),
      h(
        "p",
        { "data-testid": "job-summary" },
        `round ${job.current_round ?? "–"} of ${job.rounds} · accuracy ${fmt(job.accuracy)} · loss ${fmt(job.loss)} · `,
        `dataset ${job.dataset_id} · created ${when(job.created_at)}`,
        job.finished_at ? ` · finished ${when(job.finished_at)}` : "",
      ),
      job.error ? h("p", { class: "error" }, `${job.error_code ?? "error"}: ${job.error}`) : null,
      job.waiting
        ? h(
            "p",
            { class: "waiting", "data-testid": "job-waiting" },
            `round ${job.waiting.round} (attempt ${job.waiting.attempt}) waits for peers: ${job.waiting.online} of ${job.waiting.needed} online; `,
            `the job fails at ${when(job.waiting.until)} if they are not`,
          )
        : null,
    );
    put(
      live,
      h(
        "div",
        { class: "charts" },
        lineChart("holdout accuracy", [{ name: "accuracy", points: pts.map((p) => [p[0], p[2]]) }], { testid: "curve-accuracy", yMin: 0, yMax: 1 }),
        lineChart("holdout loss", [{ name: "loss", points: pts.map((p) => [p[0], p[1]]) }], { testid: "curve-loss", yMin: 0 }),
      ),
      h("h2", {}, "Rounds"),
      metrics.compression && metrics.compression !== "none"
        ? h("p", { "data-testid": "compression" }, `Updates travel as ${metrics.compression}.`)
        : null,
      table(
        ["round", "accuracy", "loss", "samples", "updates", "bytes up", "bytes down per peer", "duration (s)"],
        metrics.rounds.map((r) => [
          r.round,
          fmt(r.accuracy),
          fmt(r.loss),
          r.samples,
          r.peers ?? "–",
          bytesUp(r),
          r.bytes_down_per_peer?.toLocaleString() ?? "–",
          fmt(r.duration_s, 1),
        ]),
        { "data-testid": "rounds" },
      ),
      h("h2", {}, "Peers"),
      table(["peer", "shard", "task (current round)", "device", "progress", "train loss", "train accuracy"], peerRows(job, metrics, names), { "data-testid": "job-peers" }),
      peerCurves(metrics, label),
      h("h2", {}, "Lineage"),
      lineage(job, metrics, children),
      h("h2", {}, "Model"),
      h("p", {}, ...buttons, " ", finalReady ? `version ${job.final_version}` : "not exported yet", " ", dlStatus),
      failed.length ? h("h2", {}, `Failed tasks (${failed.length})`) : null,
      ...failed.map((t) =>
        h(
          "div",
          { "data-testid": "failed-task" },
          h("p", { class: "error" }, `round ${t.round}, attempt ${t.attempt}, shard ${t.shard}, peer ${t.peer_id}: ${t.state} — ${t.error ?? ""}`),
          t.traceback ? h("pre", {}, t.traceback) : null,
        ),
      ),
      h("h2", {}, "Config"),
      config === null ? h("p", { class: "muted" }, "not written yet (after sharding)") : h("pre", { "data-testid": "config" }, JSON.stringify(config, null, 2)),
    );
    return !FINISHED.has(job.state) || (!finalReady && job.state === "completed");
  };
  await tick();
  return tick;
};

const EVENTS_PAGE = 50;

/** An event's payload: one line, cut short, that opens onto the whole of it. */
function eventData(data: Record<string, unknown>): HTMLElement {
  const line = JSON.stringify(data);
  if (line.length <= 140) return h("code", {}, line);
  return h("details", {}, h("summary", {}, h("code", {}, line.slice(0, 140) + "…")), h("pre", {}, JSON.stringify(data, null, 2)));
}

/** The job's events in log order, EVENTS_PAGE at a time (the page on screen is re-read
 * while polling: a running job's last page grows). */
export const eventsView: View = async (root, [jobId], alive) => {
  let offset = 0;
  let shown = "";
  const body = h("div");
  const job = await get<JobDetail>(`/api/jobs/${jobId}`);
  put(root, h("h1", {}, "Events of ", h("a", { href: `#/jobs/${jobId}` }, job.name)), body);
  const draw = async (force = false): Promise<void> => {
    const page = await get<Page<JobEvent>>(`/api/jobs/${jobId}/events?limit=${EVENTS_PAGE}&offset=${offset}`);
    const key = `${offset}:${page.items.length}:${page.next_offset}`;
    if (!alive() || (key === shown && !force)) return;
    shown = key;
    const go = (to: number) => () => {
      offset = Math.max(0, to);
      void draw(true);
    };
    const pager = h(
      "p",
      { class: "pager" },
      h("button", { class: "secondary", disabled: offset === 0, onclick: go(offset - EVENTS_PAGE), "data-testid": "events-prev" }, "← earlier"),
      page.items.length ? `events ${offset + 1}–${offset + page.items.length}` : "no events",
      h("button", { class: "secondary", disabled: page.next_offset === null, onclick: go(page.next_offset ?? offset), "data-testid": "events-next" }, "later →"),
    );
    put(
      body,
      pager,
      table(
        ["#", "time", "type", "by", "data"],
        page.items.map((e, i) => [
          offset + i + 1,
          when(e.occurred_at),
          h("code", { class: "nowrap" }, e.type),
          // an actor is an account or peer id: its last characters tell them apart
          e.actor ? h("code", { title: e.actor }, `…${e.actor.slice(-8)}`) : e.producer,
          eventData(e.data),
        ]),
        { "data-testid": "events" },
      ),
    );
  };
  await draw(true);
  return () => draw();
};

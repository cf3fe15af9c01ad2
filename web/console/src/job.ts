// One job: live holdout curves, each peer's progress, failed tasks, config, model download,
// the model's architecture.
import { all, ApiError, get, request } from "./api";
import { architecture } from "./architecture";
import { lineChart } from "./chart";
import { fmt, h, put, stateEl, table, when } from "./dom";
import { FINISHED, JobDetail, JobMetrics, Peer, PeerEpoch } from "./types";
import type { View } from "./main";

async function download(jobId: string, format: "pt" | "safetensors", status: HTMLElement): Promise<void> {
  status.textContent = "downloading…";
  try {
    const blob = await (await request(`/api/models/${jobId}/final?format=${format}`)).blob();
    const url = URL.createObjectURL(blob);
    const a = h("a", { href: url, download: `${jobId}.${format}` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    status.textContent = `${format}: ${blob.size.toLocaleString()} bytes`;
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
  // What polling redraws, and the architecture below it, drawn once.
  const live = h("div");
  put(root, live, await architecture(jobId));
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
    if (!alive()) return false;
    const initial = metrics.initial ? ([[0, metrics.initial.loss, metrics.initial.accuracy]] as const) : [];
    const pts = [...initial, ...metrics.rounds.map((r) => [r.round, r.loss, r.accuracy] as const)];
    const failed = job.tasks.filter((t) => t.state === "failed" || t.state === "rejected");
    const finalReady = job.final_version !== null;
    const buttons = (["pt", "safetensors"] as const).map((f) =>
      h("button", { disabled: !finalReady, "data-testid": `download-${f}`, onclick: () => download(jobId, f, dlStatus) }, `Download ${f}`),
    );
    put(
      live,
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
      h(
        "div",
        { class: "charts" },
        lineChart("holdout accuracy", [{ name: "accuracy", points: pts.map((p) => [p[0], p[2]]) }], { testid: "curve-accuracy" }),
        lineChart("holdout loss", [{ name: "loss", points: pts.map((p) => [p[0], p[1]]) }], { testid: "curve-loss" }),
      ),
      h("h2", {}, "Rounds"),
      table(
        ["round", "accuracy", "loss", "samples", "updates", "duration (s)"],
        metrics.rounds.map((r) => [r.round, fmt(r.accuracy), fmt(r.loss), r.samples, r.peers ?? "–", fmt(r.duration_s, 1)]),
        { "data-testid": "rounds" },
      ),
      h("h2", {}, "Peers"),
      table(["peer", "shard", "task (current round)", "device", "progress", "train loss", "train accuracy"], peerRows(job, metrics, names), { "data-testid": "job-peers" }),
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

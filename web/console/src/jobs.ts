// The jobs list, and several jobs' curves on one chart.
import { all, get } from "./api";
import { lineChart, Series } from "./chart";
import { fmt, h, stateEl, table, when } from "./dom";
import { JobMetrics, JobSummary } from "./types";
import type { View } from "./main";

export const jobsView: View = async (root) => {
  const jobs = await all<JobSummary>("/api/jobs");
  const picked = new Set<string>();
  const compare = h("button", { disabled: true, "data-testid": "compare" }, "Compare selected") as HTMLButtonElement;
  compare.addEventListener("click", () => (location.hash = `#/compare/${[...picked].join(",")}`));
  const rows = jobs.map((j) => {
    const box = h("input", { type: "checkbox", "aria-label": `select ${j.name}` }) as HTMLInputElement;
    box.addEventListener("change", () => {
      if (box.checked) picked.add(j.job_id);
      else picked.delete(j.job_id);
      compare.disabled = picked.size < 2;
    });
    return [
      box,
      h("a", { href: `#/jobs/${j.job_id}` }, j.name),
      stateEl(j.state),
      `${j.current_round ?? "–"} / ${j.rounds}`,
      j.peers,
      fmt(j.accuracy),
      fmt(j.loss),
      when(j.created_at),
    ];
  });
  root.replaceChildren(
    h("h1", {}, "Jobs"),
    jobs.length
      ? table(["", "name", "state", "round", "peers", "accuracy", "loss", "created"], rows, { "data-testid": "jobs" })
      : h("p", { class: "muted" }, "No jobs yet: create one with `peertrain job create job.yaml`."),
    h("p", {}, compare, " ", h("span", { class: "muted" }, "tick two or more jobs to compare their curves")),
  );
};

export const compareView: View = async (root, ids, alive) => {
  const jobIds = (ids[0] ?? "").split(",").filter(Boolean);
  const tick = async (): Promise<void> => {
    const found = await Promise.all(
      jobIds.map(async (id) => ({
        job: await get<JobSummary>(`/api/jobs/${id}`),
        metrics: await get<JobMetrics>(`/api/jobs/${id}/metrics`),
      })),
    );
    const curve = (pick: (r: { loss: number; accuracy: number }) => number): Series[] =>
      found.map(({ job, metrics }) => ({
        name: `${job.name} (${job.job_id.slice(0, 8)})`,
        points: [
          ...(metrics.initial ? [[0, pick(metrics.initial)] as [number, number]] : []),
          ...metrics.rounds.map((r) => [r.round, pick(r)] as [number, number]),
        ],
      }));
    if (!alive()) return;
    root.replaceChildren(
      h("h1", {}, `Comparing ${jobIds.length} jobs`),
      h(
        "div",
        { class: "charts" },
        lineChart("holdout accuracy", curve((r) => r.accuracy), { testid: "compare-accuracy" }),
        lineChart("holdout loss", curve((r) => r.loss), { testid: "compare-loss" }),
      ),
      table(
        ["job", "state", "rounds", "accuracy", "loss"],
        found.map(({ job }) => [
          h("a", { href: `#/jobs/${job.job_id}` }, job.name),
          stateEl(job.state),
          `${job.current_round ?? "–"} / ${job.rounds}`,
          fmt(job.accuracy),
          fmt(job.loss),
        ]),
      ),
    );
  };
  await tick();
  return tick;
};

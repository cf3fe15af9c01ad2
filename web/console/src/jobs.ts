// The jobs list (polled: states, rounds and metrics change without a reload), and several
// jobs' curves on one chart.
import { all, get } from "./api";
import { lineChart, Series } from "./chart";
import { cmd, fmt, h, stateEl, table, when } from "./dom";
import { FINISHED, JobMetrics, JobSummary } from "./types";
import type { View } from "./view";

/** Which jobs the compare button takes (kept across the list's refreshes). */
const picked = new Set<string>();

export const jobsView: View = async (root, _params, alive) => {
  const compare = h("button", { disabled: true, "data-testid": "compare" }, "Compare selected") as HTMLButtonElement;
  compare.addEventListener("click", () => (location.hash = `#/compare/${[...picked].join(",")}`));
  const list = h("div");
  root.replaceChildren(
    h("h1", {}, "Jobs"),
    h("p", { class: "actions" }, h("a", { href: "#/jobs/new", "data-testid": "new-job" }, "New job"), compare, h("span", { class: "muted" }, "tick two or more jobs to compare their curves")),
    list,
  );
  const tick = async (): Promise<void> => {
    const jobs = await all<JobSummary>("/api/jobs");
    if (!alive()) return;
    const known = new Set(jobs.map((j) => j.job_id));
    for (const id of picked) if (!known.has(id)) picked.delete(id);
    compare.disabled = picked.size < 2;
    const rows = jobs.map((j) => {
      const box = h("input", { type: "checkbox", "aria-label": `select ${j.name}`, checked: picked.has(j.job_id) }) as HTMLInputElement;
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
    list.replaceChildren(
      jobs.length
        ? table(["", "name", "state", "round", "peers", "accuracy", "loss", "created"], rows, { "data-testid": "jobs" })
        : h(
            "p",
            { class: "muted", "data-testid": "jobs-empty" },
            "No jobs yet: fill in ",
            h("a", { href: "#/jobs/new" }, "a new job"),
            ", or run ",
            cmd("peertrain job create --dataset <id> --count 2"),
            " (ids: ",
            cmd("peertrain dataset ls"),
            ").",
          ),
    );
  };
  await tick();
  return tick;
};

/** Legend labels: each job's name; where two jobs share a name, each also shows the
 * shortest suffix of its id that no other job of that name ends with (ids are UUIDv7s:
 * their first characters are a timestamp, shared by jobs created close together). */
export function jobLabels(jobs: Array<{ job_id: string; name: string }>): string[] {
  return jobs.map((j) => {
    const twins = jobs.filter((o) => o.name === j.name && o.job_id !== j.job_id).map((o) => o.job_id);
    if (twins.length === 0) return j.name;
    let n = 4;
    while (n < j.job_id.length && twins.some((t) => t.endsWith(j.job_id.slice(-n)))) n++;
    return `${j.name} …${j.job_id.slice(-n)}`;
  });
}

export const compareView: View = async (root, ids, alive) => {
  const jobIds = [...new Set((ids[0] ?? "").split(",").filter(Boolean))];
  // Polled until every job has ended.
  const tick = async (): Promise<boolean> => {
    const found = await Promise.all(
      jobIds.map(async (id) => ({
        job: await get<JobSummary>(`/api/jobs/${id}`),
        metrics: await get<JobMetrics>(`/api/jobs/${id}/metrics`),
      })),
    );
    const labels = jobLabels(found.map(({ job }) => job));
    const curve = (pick: (r: { loss: number; accuracy: number }) => number): Series[] =>
      found.map(({ metrics }, i) => ({
        name: labels[i],
        points: [
          ...(metrics.initial ? [[0, pick(metrics.initial)] as [number, number]] : []),
          ...metrics.rounds.map((r) => [r.round, pick(r)] as [number, number]),
        ],
      }));
    if (!alive()) return false;
    root.replaceChildren(
      h("h1", {}, `Comparing ${jobIds.length} jobs`),
      h(
        "div",
        { class: "charts" },
        lineChart("holdout accuracy", curve((r) => r.accuracy), { testid: "compare-accuracy", yMin: 0, yMax: 1 }),
        lineChart("holdout loss", curve((r) => r.loss), { testid: "compare-loss", yMin: 0 }),
      ),
      table(
        ["job", "state", "rounds", "accuracy", "loss"],
        found.map(({ job }, i) => [
          h("a", { href: `#/jobs/${job.job_id}` }, labels[i]),
          stateEl(job.state),
          `${job.current_round ?? "–"} / ${job.rounds}`,
          fmt(job.accuracy),
          fmt(job.loss),
        ]),
      ),
    );
    return !found.every(({ job }) => FINISHED.has(job.state));
  };
  await tick();
  return tick;
};

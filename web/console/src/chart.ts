// Line charts drawn as SVG by hand: one or more series of (x, y) points on shared axes.
// The chart element carries data-points (the most rounds any series has a point for) so
// that a test can watch a curve grow.

const NS = "http://www.w3.org/2000/svg";
export const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"];

export interface Series {
  name: string;
  points: Array<[number, number]>;
}

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function ticks(lo: number, hi: number, n: number): number[] {
  if (hi === lo) return [lo];
  return Array.from({ length: n + 1 }, (_, i) => lo + ((hi - lo) * i) / n);
}

export function lineChart(
  title: string,
  series: Series[],
  opts: { width?: number; height?: number; xLabel?: string; testid?: string } = {},
): HTMLElement {
  const W = opts.width ?? 520, H = opts.height ?? 260;
  const m = { l: 52, r: 12, t: 24, b: 34 };
  const all = series.flatMap((s) => s.points);
  // Rounds' points: round 0 (the initial model) is drawn but not counted.
  const counted = (s: Series) => s.points.filter((p) => p[0] > 0).length;
  const box = document.createElement("div");
  box.className = "chart";
  box.dataset.testid = opts.testid ?? "";
  box.dataset.points = String(Math.max(0, ...series.map(counted)));
  const root = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
  root.append(svg("text", { x: m.l, y: 15, "font-weight": 600 }, title));
  box.append(root);
  if (all.length === 0) {
    root.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no points yet"));
    return box;
  }
  let [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
  if (y0 === y1) [y0, y1] = [y0 - 0.5, y1 + 0.5];
  const pad = (y1 - y0) * 0.05;
  [y0, y1] = [y0 - pad, y1 + pad];
  const X = (x: number) => m.l + ((x - x0) / (x1 - x0)) * (W - m.l - m.r);
  const Y = (y: number) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  for (const y of ticks(y0, y1, 4)) {
    root.append(svg("line", { x1: m.l, x2: W - m.r, y1: Y(y), y2: Y(y), stroke: "#eef0f3" }));
    root.append(svg("text", { x: m.l - 6, y: Y(y) + 4, "text-anchor": "end" }, y.toFixed(3)));
  }
  const xs = x1 - x0 <= 12 ? Array.from({ length: x1 - x0 + 1 }, (_, i) => x0 + i) : ticks(x0, x1, 6).map(Math.round);
  for (const x of xs) root.append(svg("text", { x: X(x), y: H - m.b + 16, "text-anchor": "middle" }, String(x)));
  root.append(svg("text", { x: (W + m.l) / 2, y: H - 4, "text-anchor": "middle" }, opts.xLabel ?? "round"));
  root.append(svg("line", { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b, stroke: "#aab" }));
  root.append(svg("line", { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b, stroke: "#aab" }));
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const d = s.points.map((p, j) => `${j ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join("");
    root.append(svg("path", { d, fill: "none", stroke: color, "stroke-width": 2 }));
    for (const p of s.points) {
      const dot = svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 3.5, fill: color });
      dot.append(svg("title", {}, `${s.name}: round ${p[0]}, ${p[1].toFixed(4)}`));
      root.append(dot);
    }
  });
  if (series.length > 1) {
    const legend = document.createElement("div");
    legend.className = "legend";
    series.forEach((s, i) => {
      const item = document.createElement("span");
      const sw = document.createElement("i");
      sw.style.background = COLORS[i % COLORS.length];
      item.append(sw, s.name);
      legend.append(item);
    });
    box.append(legend);
  }
  return box;
}

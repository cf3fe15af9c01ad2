// Line charts drawn as SVG by hand: one or more series of (x, y) points on shared axes.
// The y axis runs between "nice" ticks (steps of 1, 2 or 5 times a power of ten), from a
// fixed end where the quantity has one (accuracy: 0 to 1; loss: from 0). The chart element
// carries data-points (the most rounds any series has a point for) so that a test can
// watch a curve grow, and data-y0/data-y1 (the y axis' ends).

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

/** The step of about `n` intervals over `span`: 1, 2 or 5 times a power of ten. */
export function niceStep(span: number, n: number): number {
  const raw = span / n;
  const k = 10 ** Math.floor(Math.log10(raw));
  const f = raw / k;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * k;
}

/** Ticks at multiples of a nice step, from the one at or below `lo` to the one at or above
 * `hi`, and how many decimals their labels need. */
export function niceTicks(lo: number, hi: number, n = 5): { ticks: number[]; digits: number } {
  if (!(hi > lo)) [lo, hi] = [lo - 0.5, hi + 0.5];
  const step = niceStep(hi - lo, n);
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
  const ticks = Array.from({ length: last - first + 1 }, (_, i) => Number(((first + i) * step).toFixed(digits)));
  return { ticks, digits };
}

/** How a point's x reads in its tooltip (whole rounds as they are). */
const xText = (x: number): string => (Number.isInteger(x) ? String(x) : x.toFixed(2));

export function lineChart(
  title: string,
  series: Series[],
  opts: {
    width?: number;
    height?: number;
    xLabel?: string;
    testid?: string;
    /** Fixed ends of the y axis (accuracy: 0 and 1; loss: 0); the data decides the rest. */
    yMin?: number;
    yMax?: number;
  } = {},
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
  // Whole rounds at the x axis' ends (a peer's epochs fall between them).
  let [x0, x1] = [Math.floor(Math.min(...all.map((p) => p[0]))), Math.ceil(Math.max(...all.map((p) => p[0])))];
  if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
  const ys = all.map((p) => p[1]);
  const { ticks: yTicks, digits } = niceTicks(opts.yMin ?? Math.min(...ys), opts.yMax ?? Math.max(...ys), 5);
  const [y0, y1] = [yTicks[0], yTicks[yTicks.length - 1]];
  box.dataset.y0 = String(y0);
  box.dataset.y1 = String(y1);
  const X = (x: number) => m.l + ((x - x0) / (x1 - x0)) * (W - m.l - m.r);
  const Y = (y: number) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  for (const y of yTicks) {
    root.append(svg("line", { x1: m.l, x2: W - m.r, y1: Y(y), y2: Y(y), stroke: "#eef0f3" }));
    root.append(svg("text", { x: m.l - 6, y: Y(y) + 4, "text-anchor": "end" }, y.toFixed(digits)));
  }
  const xs = x1 - x0 <= 12 ? Array.from({ length: x1 - x0 + 1 }, (_, i) => x0 + i) : niceTicks(x0, x1, 6).ticks.filter((x) => x >= x0 && x <= x1);
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
      dot.append(svg("title", {}, `${s.name}: ${opts.xLabel ?? "round"} ${xText(p[0])}, ${p[1].toFixed(4)}`));
      root.append(dot);
    }
  });
  if (series.length > 1) {
    const legend = document.createElement("div");
    legend.className = "legend";
    legend.dataset.testid = "legend";
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

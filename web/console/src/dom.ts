// A tiny element builder. Data from the API is only ever set as text (never as HTML).

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | ((ev: Event) => void) | null | undefined>;

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "object" ? c : String(c));
  }
}

/** A table (attrs on the <table>), in a box of its own that scrolls sideways when the
 * table is wider than the page (a 31-column preview): the page never is. `boxed` false:
 * the bare table, for a caller whose own box scrolls (the architecture's). */
export function table(head: string[], rows: Child[][], attrs: Attrs = {}, boxed = true): HTMLElement {
  const el = h(
    "table",
    attrs,
    h("thead", {}, h("tr", {}, ...head.map((c) => h("th", {}, c)))),
    h("tbody", {}, ...rows.map((r) => h("tr", {}, ...r.map((c) => h("td", {}, c))))),
  );
  return boxed ? h("div", { class: "wide" }, el) : el;
}

/** A command to type, shown as code (never with markup around it). */
export const cmd = (text: string): HTMLElement => h("code", { class: "cmd" }, text);

export const fmt = (x: number | null | undefined, digits = 4): string =>
  x === null || x === undefined ? "–" : x.toFixed(digits);

export const when = (iso: string | null | undefined): string =>
  iso ? new Date(iso).toLocaleString() : "–";

export const stateEl = (state: string): HTMLElement => h("span", { class: `state-${state}` }, state);

/** Replace an element's children (null, undefined and false are left out). */
export function put(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

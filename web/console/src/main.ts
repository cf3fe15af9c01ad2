// The console's shell: log-in form, navigation and a hash router (#/jobs, #/jobs/new,
// #/jobs/<id>, #/jobs/<id>/events, #/compare/<id>,<id>, #/peers, #/datasets,
// #/datasets/new, #/datasets/<id>). A view that returns a tick function is refreshed by
// polling it every POLL_MS while it is on screen, until the tick answers false (a
// finished job); a hidden tab does not poll (it picks up again when shown).
import { ApiError, loggedIn, login, logout, onAuthChange, restore } from "./api";
import { datasetView, datasetsView, uploadView } from "./datasets";
import { h } from "./dom";
import { eventsView, jobView } from "./job";
import { newJobView } from "./jobform";
import { compareView, jobsView } from "./jobs";
import { peersView } from "./peers";
import type { View } from "./view";

// ?poll_ms= (100..10000) changes the period: the browser test polls fast to see each round.
const POLL_MS = Math.min(10_000, Math.max(100, Number(new URLSearchParams(location.search).get("poll_ms")) || 1000));
const routes: Array<[RegExp, View]> = [
  [/^#\/jobs\/new$/, newJobView],
  [/^#\/jobs\/([^/]+)\/events$/, eventsView],
  [/^#\/jobs\/([^/]+)$/, jobView],
  [/^#\/compare\/([^/]+)$/, compareView],
  [/^#\/peers$/, peersView],
  [/^#\/datasets\/new$/, uploadView],
  [/^#\/datasets\/([^/]+)$/, datasetView],
  [/^#\/datasets$/, datasetsView],
  [/^#\/jobs$/, jobsView],
];

const app = document.getElementById("app")!;
let generation = 0;

/** Resolves once the tab is visible (at once when it is). While it waits, the page's
 * <html> carries data-polling="paused" (the browser test watches it). */
function shown(): Promise<void> {
  if (!document.hidden) return Promise.resolve();
  document.documentElement.dataset.polling = "paused";
  return new Promise((resolve) => {
    const on = (): void => {
      if (document.hidden) return;
      document.removeEventListener("visibilitychange", on);
      delete document.documentElement.dataset.polling;
      resolve();
    };
    document.addEventListener("visibilitychange", on);
  });
}

function showError(e: unknown): void {
  const msg = e instanceof ApiError ? `${e.message} (${e.status} ${e.code})` : String(e);
  app.replaceChildren(h("p", { class: "error", "data-testid": "error" }, msg));
}

function loginForm(): void {
  const user = h("input", { name: "username", placeholder: "username", autocomplete: "username", required: true }) as HTMLInputElement;
  const pass = h("input", { name: "password", type: "password", placeholder: "password", autocomplete: "current-password", required: true }) as HTMLInputElement;
  const msg = h("p", { class: "error" });
  const form = h("form", { class: "login" }, h("h1", {}, "Log in"), user, pass, h("button", { type: "submit" }, "Log in"), msg);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    msg.textContent = "";
    try {
      await login(user.value, pass.value);
      if (!routes.some(([re]) => re.test(location.hash))) location.hash = "#/jobs";
      else void route();
    } catch (e) {
      msg.textContent = e instanceof ApiError ? e.message : String(e);
    }
  });
  app.replaceChildren(form);
  user.focus();
}

function chrome(): void {
  const who = loggedIn();
  const nav = document.getElementById("nav")!;
  nav.replaceChildren(
    ...(who ? [h("a", { href: "#/jobs" }, "Jobs"), h("a", { href: "#/peers" }, "Peers"), h("a", { href: "#/datasets" }, "Datasets")] : []),
  );
  document.getElementById("who")!.replaceChildren(...(who ? [`${who} · `, h("a", { href: "#", onclick: (ev: Event) => (ev.preventDefault(), void logout()) }, "log out")] : []));
}

async function route(): Promise<void> {
  const mine = ++generation;
  const alive = () => mine === generation;
  chrome();
  if (!loggedIn()) return loginForm();
  const hash = location.hash || "#/jobs";
  const found = routes.find(([re]) => re.test(hash));
  if (!found) {
    location.hash = "#/jobs";
    return;
  }
  const [re, view] = found;
  try {
    const tick = await view(app, hash.match(re)!.slice(1).map(decodeURIComponent), alive);
    while (tick && alive()) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      await shown();
      if (!alive()) break;
      try {
        if ((await tick()) === false) break;
      } catch (e) {
        // a blip (gateway restart, 502): keep the page, try again on the next tick
        if (e instanceof ApiError && e.status === 401) throw e;
      }
    }
  } catch (e) {
    if (alive()) {
      if (!loggedIn()) loginForm();
      else showError(e);
    }
  }
}

// A reload keeps the tab's session (api.restore); the page waits for it before routing.
app.replaceChildren(h("p", { class: "muted" }, "…"));
void restore().then(() => {
  onAuthChange(() => void route());
  window.addEventListener("hashchange", () => void route());
  void route();
});

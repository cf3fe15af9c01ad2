// The public API, with the user's own login. The access token lives in this module's
// memory only. The refresh token is also kept in the tab's sessionStorage (never
// localStorage), so that a reload stays logged in: at start, restore() trades it for a
// fresh pair. sessionStorage belongs to one tab and ends with it; see docs/console.md for
// why that is the safe choice here. The refresh token rotates (each refresh spends it, and
// presenting a spent one revokes the session), so refreshes take turns: every caller
// waits on the one refresh in flight, as the SDK's TokenAuth does.
import type { ErrorResponse, Page, TokenPair } from "./types";

export interface Tokens {
  access: string;
  refresh: string;
  expiresAt: number; // ms since the epoch; 0 when unknown
  username: string;
}

/** The platform's one error shape, `{"error": {"code", "message", "detail"}}`. */
export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public detail: unknown = null,
  ) {
    super(message);
  }
}

/** sessionStorage key of `{refresh, username}`: the tab's session across reloads. */
const SESSION_KEY = "peertrain.session";

/** An error as one line for the page: the message, then each problem the API named
 * (`detail`: a 422's `{loc, msg}` items, a 409's peers and problems). */
export function explain(e: unknown): string {
  if (!(e instanceof ApiError)) return String(e instanceof Error ? e.message : e);
  const d = e.detail;
  const parts: string[] = [];
  if (Array.isArray(d)) {
    for (const item of d) {
      const it = item as { loc?: unknown[]; msg?: string };
      parts.push(it && it.msg ? `${(it.loc ?? []).filter((x) => x !== "body").join(".")}: ${it.msg}` : JSON.stringify(item));
    }
  } else if (d && typeof d === "object") {
    parts.push(JSON.stringify(d));
  }
  return `${e.message} (${e.status} ${e.code})${parts.length ? ": " + parts.join("; ") : ""}`;
}

let tokens: Tokens | null = null;
let refreshing: Promise<void> | null = null;
const listeners: Array<() => void> = [];

export const loggedIn = (): string | null => (tokens ? tokens.username : null);
export const onAuthChange = (fn: () => void): void => void listeners.push(fn);
const changed = (): void => listeners.forEach((fn) => fn());

async function errorOf(r: Response): Promise<ApiError> {
  try {
    // any JSON may come back (a proxy's error page): the one shape is only what it should be
    const body = (await r.json()) as Partial<ErrorResponse> | null;
    const e = body?.error;
    if (e) return new ApiError(r.status, e.code, e.message, e.detail);
  } catch {
    /* not JSON */
  }
  return new ApiError(r.status, "http_" + r.status, r.statusText || "request failed");
}

function keep(pair: TokenPair, username: string): void {
  tokens = {
    access: pair.access_token,
    refresh: pair.refresh_token,
    expiresAt: pair.expires_in ? Date.now() + pair.expires_in * 1000 : 0,
    username,
  };
  // Only the refresh token (the access token is never written anywhere).
  try {
    sessionStorage.setItem(SESSION_KEY, JSON.stringify({ refresh: pair.refresh_token, username }));
  } catch {
    /* storage off (a private window's quota): the session then ends with the page */
  }
}

function forget(): void {
  tokens = null;
  try {
    sessionStorage.removeItem(SESSION_KEY);
  } catch {
    /* nothing kept */
  }
}

/** At start: the tab's kept session, renewed (a spent, expired or revoked refresh token
 * is refused, and the login form shows). Resolves either way. */
export async function restore(): Promise<void> {
  let kept: { refresh?: unknown; username?: unknown } | null = null;
  try {
    kept = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? "null");
  } catch {
    kept = null;
  }
  if (!kept || typeof kept.refresh !== "string" || typeof kept.username !== "string") return;
  // expiresAt 1: the first request would renew it; refresh() now does so at once.
  tokens = { access: "", refresh: kept.refresh, expiresAt: 1, username: kept.username };
  await refresh(tokens).catch(() => undefined);
}

export async function login(username: string, password: string): Promise<void> {
  const r = await fetch("/api/auth/token", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ username, password }),
  });
  if (!r.ok) throw await errorOf(r);
  keep(await r.json(), username);
  changed();
}

export async function logout(): Promise<void> {
  const t = tokens;
  forget();
  changed();
  if (t) {
    await fetch("/api/auth/logout", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ refresh_token: t.refresh }),
    }).catch(() => undefined);
  }
}

/** Trade the refresh token for a new pair, once for every caller waiting. */
function refresh(spent: Tokens): Promise<void> {
  if (tokens !== spent) return Promise.resolve(); // someone already renewed them
  refreshing ??= (async () => {
    try {
      const r = await fetch("/api/auth/refresh", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ refresh_token: spent.refresh }),
      });
      if (!r.ok) {
        forget(); // refused: the session is over, log in again
        changed();
        throw await errorOf(r);
      }
      keep(await r.json(), spent.username);
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

/** An authenticated request: renewed before a token runs out, and once on a 401. */
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    if (refreshing) await refreshing;
    const t = tokens;
    if (!t) throw new ApiError(401, "not_logged_in", "log in first");
    if (t.expiresAt && Date.now() + 30_000 >= t.expiresAt) {
      await refresh(t);
      continue;
    }
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${t.access}`);
    const r = await fetch(path, { ...init, headers });
    if (r.status === 401 && attempt === 0) {
      await refresh(t);
      continue;
    }
    if (!r.ok) throw await errorOf(r);
    return r;
  }
}

/** A JSON POST (its answer's body, parsed). */
export async function post<T>(path: string, body?: unknown): Promise<T> {
  const init: RequestInit =
    body === undefined ? { method: "POST" } : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  return (await request(path, init)).json() as Promise<T>;
}

/** A current access token (renewed first when it is about to run out), for a request
 * fetch() cannot make: an XMLHttpRequest that reports its upload's progress. */
export async function bearer(): Promise<string> {
  for (;;) {
    if (refreshing) await refreshing;
    const t = tokens;
    if (!t) throw new ApiError(401, "not_logged_in", "log in first");
    if (!t.expiresAt || Date.now() + 30_000 < t.expiresAt) return t.access;
    await refresh(t);
  }
}

export async function get<T>(path: string): Promise<T> {
  return (await request(path)).json() as Promise<T>;
}

/** Every item of a paged list (`{items, next_offset}`). */
export async function all<T>(path: string): Promise<T[]> {
  const items: T[] = [];
  let offset: number | null = 0;
  const sep = path.includes("?") ? "&" : "?";
  while (offset !== null) {
    const page: Page<T> = await get(`${path}${sep}limit=100&offset=${offset}`);
    items.push(...page.items);
    offset = page.next_offset;
  }
  return items;
}

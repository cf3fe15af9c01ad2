// The public API, with the user's own login. Tokens live in this module's memory only
// (never localStorage): a reload means logging in again. The refresh token rotates (each
// refresh spends it, and presenting a spent one revokes the session), so refreshes take
// turns: every caller waits on the one refresh in flight, as the SDK's TokenAuth does.

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

let tokens: Tokens | null = null;
let refreshing: Promise<void> | null = null;
const listeners: Array<() => void> = [];

export const loggedIn = (): string | null => (tokens ? tokens.username : null);
export const onAuthChange = (fn: () => void): void => void listeners.push(fn);
const changed = (): void => listeners.forEach((fn) => fn());

async function errorOf(r: Response): Promise<ApiError> {
  try {
    const body = await r.json();
    const e = body?.error;
    if (e) return new ApiError(r.status, e.code, e.message, e.detail);
  } catch {
    /* not JSON */
  }
  return new ApiError(r.status, "http_" + r.status, r.statusText || "request failed");
}

function keep(pair: { access_token: string; refresh_token: string; expires_in?: number }, username: string): void {
  tokens = {
    access: pair.access_token,
    refresh: pair.refresh_token,
    expiresAt: pair.expires_in ? Date.now() + pair.expires_in * 1000 : 0,
    username,
  };
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
  tokens = null;
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
        tokens = null; // refused: the session is over, log in again
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

export async function get<T>(path: string): Promise<T> {
  return (await request(path)).json() as Promise<T>;
}

/** Every item of a paged list (`{items, next_offset}`). */
export async function all<T>(path: string): Promise<T[]> {
  const items: T[] = [];
  let offset: number | null = 0;
  const sep = path.includes("?") ? "&" : "?";
  while (offset !== null) {
    const page: { items: T[]; next_offset: number | null } = await get(`${path}${sep}limit=100&offset=${offset}`);
    items.push(...page.items);
    offset = page.next_offset;
  }
  return items;
}

"""A fake PeerTrain API for ``httpx.MockTransport``: just enough state for the client."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

Handler = Callable[[httpx.Request], httpx.Response]
# The lists a short id is resolved against, and the key of each item's id.
LISTS = {"/api/jobs": "job_id", "/api/datasets": "id", "/api/registry/peers": "peer_id"}
NOT_IDS = {"schema"}


def error(status: int, code: str, message: str) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "detail": None}}
    return httpx.Response(status, json=body)


class FakeApi:
    """Tokens ``access-N`` / ``refresh-N``; ``expire()`` makes the current access token
    answer 401; routes are added per test with ``route(method, path, handler_or_json)``.

    A list of :data:`LISTS` that no test routed answers one item per id its routes
    name (``GET /api/jobs/j1`` routed: ``/api/jobs`` lists ``{"job_id": "j1"}``), plus
    the ids ``known(list_path, *ids)`` added: what the CLI resolves short ids against.
    """

    def __init__(self) -> None:
        self.generation = 1
        self.valid_access = {"access-1"}
        self.valid_refresh = {"refresh-1"}
        self.requests: list[httpx.Request] = []
        self.routes: dict[tuple[str, str], Any] = {}
        self.public: set[tuple[str, str]] = set()
        self.extra: dict[str, list[str]] = {}
        self.transport = httpx.MockTransport(self.handle)

    def expire(self) -> None:
        self.valid_access.clear()

    def route(
        self, method: str, path: str, answer: Any, status: int = 200, *, public: bool = False
    ) -> None:
        self.routes[(method, path)] = answer if callable(answer) else (status, answer)
        if public:  # answered without a token
            self.public.add((method, path))

    def known(self, path: str, *ids: str) -> None:
        """``path``'s unrouted list also holds ``ids``."""
        self.extra.setdefault(path, []).extend(ids)

    def _listed(self, path: str) -> httpx.Response:
        named = [
            p[len(path) + 1 :].split("/")[0] for _, p in self.routes if p.startswith(path + "/")
        ]
        ids = [i for i in dict.fromkeys([*named, *self.extra.get(path, [])]) if i not in NOT_IDS]
        items = [{LISTS[path]: i, "name": f"name-{i}"} for i in ids]
        return httpx.Response(200, json={"items": items, "next_offset": None})

    def _pair(self) -> httpx.Response:
        self.generation += 1
        n = self.generation
        self.valid_access = {f"access-{n}"}
        self.valid_refresh = {f"refresh-{n}"}
        pair = {"access_token": f"access-{n}", "refresh_token": f"refresh-{n}", "expires_in": 900}
        return httpx.Response(200, json={**pair, "token_type": "bearer"})

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if path == "/api/auth/token":
            form = dict(x.split("=", 1) for x in request.content.decode().split("&"))
            if form.get("password") != "right-password":
                return error(401, "unauthorized", "wrong username or password")
            return self._pair()
        if path == "/api/auth/refresh":
            token = json.loads(request.content)["refresh_token"]
            if token not in self.valid_refresh:
                return error(401, "unauthorized", "invalid refresh token")
            return self._pair()
        if path == "/api/auth/logout":
            return httpx.Response(204)
        answer = self.routes.get((request.method, path))
        if answer is None and request.method == "GET" and path in LISTS:
            return self._listed(path)
        if answer is None:
            return error(404, "not_found", "no such route")
        auth = request.headers.get("authorization", "")
        public = (request.method, path) in self.public
        if not public and auth.removeprefix("Bearer ") not in self.valid_access:
            return error(401, "unauthorized", "token expired")
        if callable(answer):
            result: httpx.Response = answer(request)
            return result
        status, body = answer
        if isinstance(body, bytes):
            return httpx.Response(status, content=body)
        return httpx.Response(status, json=body)

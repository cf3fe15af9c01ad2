"""``TokenAuth``: a user's bearer token on each request, renewed when it runs out.

The one place that renews an access token. The SDK's clients send their authenticated
calls through it, and so can any plain ``httpx`` client that must stay logged in for
longer than an access token lives (15 minutes by default), such as the stack tests and
the benchmarks::

    auth = TokenAuth(Tokens.from_pair(pair), refresh_url=f"{api}/api/auth/refresh")
    async with httpx.AsyncClient(base_url=api, auth=auth) as http:
        ...  # as long as it takes

Before a request, a token known to expire within 30 s is renewed; a 401 answer renews
it once and sends the request again. The refresh token rotates (each refresh spends it,
and presenting a spent one revokes the whole session), so refreshes take turns behind a
lock, and a request sent with tokens that another request has since renewed only
retries with the new ones.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Generator

import httpx

from .errors import ApiError, NotLoggedIn
from .tokens import MemoryTokenStore, Tokens, TokenStore

__all__ = ["TokenAuth"]


class TokenAuth(httpx.Auth):
    """Bearer authentication that refreshes (an ``httpx.Auth``, sync and async).

    Parameters
    ----------
    tokens
        Credentials to start with (else whatever ``token_store`` holds).
    refresh_url
        The absolute URL of the auth service's ``POST .../refresh``.
    token_store
        Where renewed tokens are saved at once (default: memory only).

    Raises
    ------
    NotLoggedIn
        From a request, when there are no tokens.
    ApiError
        From a request, when the refresh failed; code ``session_expired`` when the
        refresh token was refused (the tokens are then forgotten: log in again).
    """

    def __init__(
        self,
        tokens: Tokens | None = None,
        *,
        refresh_url: str,
        token_store: TokenStore | None = None,
    ) -> None:
        self.refresh_url = refresh_url
        self.token_store: TokenStore = token_store or MemoryTokenStore()
        if tokens is not None:
            self.token_store.save(tokens)
        self._tokens = tokens if tokens is not None else self.token_store.load()
        self._thread_lock = threading.Lock()
        # An asyncio lock belongs to one event loop; a new loop gets a new lock.
        self._loop_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    @property
    def tokens(self) -> Tokens | None:
        """The current tokens (``None`` when not logged in)."""
        return self._tokens

    def set_tokens(self, tokens: Tokens | None) -> None:
        """Use (and save) these tokens; ``None`` forgets them."""
        self._tokens = tokens
        self.token_store.save(tokens)

    # -- the flows ----------------------------------------------------------------------

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        """Send ``request`` with a fresh token; renew and repeat once on a 401."""
        tokens = self._current()
        if self._renewable(tokens, expiring=True):
            with self._thread_lock:
                if self._tokens is tokens:  # not renewed by another thread meanwhile
                    answer = yield self._refresh_request(request, tokens)
                    answer.read()
                    self._renewed(tokens, answer)
        sent_with = self._current()
        response = yield self._authorized(request, sent_with)
        if response.status_code != 401 or not self._renewable(sent_with):
            return
        with self._thread_lock:
            if self._tokens is sent_with:
                answer = yield self._refresh_request(request, sent_with)
                answer.read()
                self._renewed(sent_with, answer)
        yield self._authorized(request, self._current())

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """The same as :meth:`sync_auth_flow`, for ``httpx.AsyncClient``."""
        tokens = self._current()
        if self._renewable(tokens, expiring=True):
            async with self._async_lock():
                if self._tokens is tokens:
                    answer = yield self._refresh_request(request, tokens)
                    await answer.aread()
                    self._renewed(tokens, answer)
        sent_with = self._current()
        response = yield self._authorized(request, sent_with)
        if response.status_code != 401 or not self._renewable(sent_with):
            return
        async with self._async_lock():
            if self._tokens is sent_with:
                answer = yield self._refresh_request(request, sent_with)
                await answer.aread()
                self._renewed(sent_with, answer)
        yield self._authorized(request, self._current())

    # -- plumbing -----------------------------------------------------------------------

    def _async_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._loop_lock is None or self._loop_lock[0] is not loop:
            self._loop_lock = (loop, asyncio.Lock())
        return self._loop_lock[1]

    def _current(self) -> Tokens:
        if self._tokens is None:
            raise NotLoggedIn("not logged in: log in first (`peertrain login`)", code="no_token")
        return self._tokens

    @staticmethod
    def _renewable(tokens: Tokens, *, expiring: bool = False) -> bool:
        return bool(tokens.refresh_token) and (not expiring or tokens.expiring())

    @staticmethod
    def _authorized(request: httpx.Request, tokens: Tokens) -> httpx.Request:
        request.headers["Authorization"] = f"Bearer {tokens.access_token}"
        return request

    def _refresh_request(self, request: httpx.Request, stale: Tokens) -> httpx.Request:
        body = {"refresh_token": stale.refresh_token}
        # the request's timeouts (the client's), which a bare Request would not have
        timeout = {k: v for k, v in request.extensions.items() if k == "timeout"}
        return httpx.Request("POST", self.refresh_url, json=body, extensions=timeout)

    def _renewed(self, stale: Tokens, answer: httpx.Response) -> None:
        """Take the new pair from the refresh's answer, or raise."""
        if answer.status_code == 401:
            self.set_tokens(None)
            raise ApiError(
                "your session has expired: log in again",
                status=401,
                code="session_expired",
                method="POST",
                url=self.refresh_url,
            )
        if answer.is_error:
            raise ApiError.from_response(answer)
        try:
            pair = answer.json()
            self.set_tokens(Tokens.from_pair(pair, stale.username))
        except (ValueError, KeyError, TypeError):
            raise ApiError(
                "the auth service answered a refresh with something that is not a token pair",
                status=answer.status_code,
                code="bad_response",
                method="POST",
                url=self.refresh_url,
            ) from None

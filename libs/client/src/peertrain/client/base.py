"""What the sync and async clients share: settings, tokens, building and reading requests."""

from __future__ import annotations

from typing import Any

import httpx

from .auth import TokenAuth
from .calls import AUTH, Call
from .config import API_ENV, DEFAULT_API, resolve_api_url
from .errors import ApiError, NotLoggedIn
from .retry import DEFAULT_RETRY, RetryPolicy, is_safe
from .tokens import FileTokenStore, MemoryTokenStore, Tokens, TokenStore

__all__ = ["API_ENV", "DEFAULT_API", "BaseClient", "resolve_api_url"]

_REDIRECTS = {301, 302, 307, 308}
MAX_REDIRECTS = 2


def _bound(store: FileTokenStore, api_url: str | None) -> FileTokenStore:
    """``store``, for the tokens of ``api_url`` (the store's own API when ``None``).

    Raises
    ------
    ValueError
        The store was made for another API: its tokens must not go to this one.
    """
    if api_url is None:
        return store
    wanted = resolve_api_url(api_url)
    if wanted == store.api_url:
        return store
    if store.bound:
        raise ValueError(f"the token store holds the tokens of {store.api_url}, not {wanted}")
    return store.for_api(wanted)


class BaseClient:
    """Settings and token bookkeeping, without I/O.

    Parameters
    ----------
    api_url
        The gateway's base URL. Default: ``$PEERTRAIN_API``, else the API that
        ``peertrain login`` logged in to last (saved in ``token_store``'s config folder
        when that is a :class:`~peertrain.client.tokens.FileTokenStore`), else
        ``http://127.0.0.1:8080`` (:func:`~peertrain.client.config.resolve_api_url`).
    tokens
        Credentials to start with (else whatever ``token_store`` holds).
    token_store
        Where the tokens are kept, refreshed tokens saved at once. Default: the CLI's
        saved login (a :class:`~peertrain.client.tokens.FileTokenStore` in the default
        config folder), so a client shares the session of ``peertrain login`` and
        whatever it logs in or renews the CLI uses too; memory only when ``tokens`` is
        given. A ``FileTokenStore`` made without an ``api_url`` keeps the tokens of this
        client's API.
    timeout
        Seconds for connecting and for each read.
    retry
        When and how often transient failures are tried again (default:
        :data:`~peertrain.client.retry.DEFAULT_RETRY`; ``NO_RETRY`` never).

    Attributes
    ----------
    auth
        The :class:`~peertrain.client.auth.TokenAuth` that authenticated calls go
        through: it sends the bearer token and renews it.
    """

    def __init__(
        self,
        api_url: str | None = None,
        *,
        tokens: Tokens | None = None,
        token_store: TokenStore | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if token_store is None:
            token_store = MemoryTokenStore() if tokens is not None else FileTokenStore()
        if isinstance(token_store, FileTokenStore):
            token_store = _bound(token_store, api_url)
            self.api_url = token_store.api_url
        else:
            self.api_url = resolve_api_url(api_url)
        self.timeout = timeout
        self.retry = retry or DEFAULT_RETRY
        self.auth = TokenAuth(
            tokens, refresh_url=f"{self.api_url}{AUTH}/refresh", token_store=token_store
        )

    @property
    def tokens(self) -> Tokens | None:
        """The current tokens (``None`` when not logged in)."""
        return self.auth.tokens

    @property
    def token_store(self) -> TokenStore:
        """Where the tokens are saved."""
        return self.auth.token_store

    def _set_tokens(self, tokens: Tokens | None) -> None:
        self.auth.set_tokens(tokens)

    def _require_tokens(self) -> Tokens:
        if self.auth.tokens is None:
            raise NotLoggedIn("not logged in: log in first (`peertrain login`)", code="no_token")
        return self.auth.tokens

    def _auth_for(self, call: Call) -> TokenAuth | None:
        """What authenticates ``call``: the token flow, or nothing (login, refresh, ...)."""
        if not call.auth:
            return None
        self._require_tokens()
        return self.auth

    @staticmethod
    def _safe(call: Call) -> bool:
        """Whether ``call`` may be sent twice (see :mod:`peertrain.client.retry`)."""
        return is_safe(call.method, call.retry)

    def _build(self, http: httpx.Client | httpx.AsyncClient, call: Call, url: str) -> httpx.Request:
        return http.build_request(
            call.method,
            url,
            json=call.json,
            data=dict(call.form) if call.form is not None else None,
            content=call.content,
            params=dict(call.params) or None,
            headers={"Content-Type": "application/octet-stream"} if call.content else None,
        )

    def _redirect_target(self, response: httpx.Response) -> str | None:
        """Where a same-origin redirect points (the gateway answers ``/api/jobs`` with a
        301 to ``/api/jobs/``); it is followed with the same method and body, unlike
        httpx's browser-style redirects, which turn a POST into a GET."""
        if response.status_code not in _REDIRECTS or "location" not in response.headers:
            return None
        target = response.request.url.join(response.headers["location"])
        base = httpx.URL(self.api_url)
        same = (target.scheme, target.host, target.port) == (base.scheme, base.host, base.port)
        return str(target) if same else None

    @staticmethod
    def _result(call: Call, response: httpx.Response) -> Any:
        if response.is_error or response.status_code in _REDIRECTS:
            raise ApiError.from_response(response)
        if call.answer == "bytes":
            return response.content
        if call.answer == "none" or response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ApiError(
                "the API answered something that is not JSON",
                status=response.status_code,
                code="bad_response",
                method=call.method,
                url=str(response.request.url),
            ) from None

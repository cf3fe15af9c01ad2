"""When to send a request again, and after how long: capped exponential backoff.

Pure: both clients ask :class:`RetryPolicy` after each try and do the waiting
themselves. What is retried:

- a connection that could not be made (refused, reset while connecting, timed out
  connecting): nothing reached the server, so any request may be sent again;
- a gateway's 502, 503 or 504, a read that broke off, and a 429 that says when to come
  back (``Retry-After``): only requests that are safe to repeat, idempotent by their
  method (GET, HEAD, OPTIONS, PUT, DELETE) or marked safe (``Call.retry``: a dry run);
  a job creation or a login is never sent twice.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from .errors import ApiError, ApiUnreachable, ClientError

__all__ = [
    "DEFAULT_RETRY",
    "IDEMPOTENT",
    "NO_RETRY",
    "RETRY_STATUSES",
    "Patience",
    "RetryPolicy",
    "is_safe",
    "is_transient",
    "retry_after",
]

IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
RETRY_STATUSES = frozenset({502, 503, 504})
# Nothing was sent: safe for any request.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """How many tries, and the backoff between them.

    Parameters
    ----------
    attempts
        Tries in all (1: never retry).
    base_s, cap_s
        The n-th wait is ``min(cap_s, base_s * 2**(n-1))``, times a random factor in
        [0.5, 1] (jitter, so many clients do not come back at once).
    retry_after_cap_s
        The longest ``Retry-After`` honoured; a 429 asking for longer is not retried.
    """

    attempts: int = 4
    base_s: float = 0.5
    cap_s: float = 8.0
    retry_after_cap_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def backoff(self, attempt: int) -> float:
        """The wait after try number ``attempt`` (from 1)."""
        ceiling: float = min(self.cap_s, self.base_s * 2.0 ** (attempt - 1))
        return ceiling * self.rng.uniform(0.5, 1.0)

    def after_response(self, response: httpx.Response, attempt: int, *, safe: bool) -> float | None:
        """Seconds to wait before trying again after ``response``; ``None``: do not."""
        if attempt >= self.attempts or not safe:
            return None
        if response.status_code in RETRY_STATUSES:
            return self.backoff(attempt)
        if response.status_code == 429:
            wait = retry_after(response)
            if wait is not None and wait <= self.retry_after_cap_s:
                return wait
        return None

    def after_error(self, exc: BaseException, attempt: int, *, safe: bool) -> float | None:
        """Seconds to wait before trying again after a transport error; ``None``: do not."""
        if attempt >= self.attempts or not isinstance(exc, httpx.TransportError):
            return None
        if isinstance(exc, _NOT_SENT) or (safe and isinstance(exc, httpx.NetworkError)):
            return self.backoff(attempt)
        if safe and isinstance(exc, httpx.ReadTimeout | httpx.RemoteProtocolError):
            return self.backoff(attempt)
        return None


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (a number or an HTTP date); ``None`` when absent."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(attempts=1)


def is_safe(method: str, marked: bool) -> bool:
    """Whether a request may be sent twice: by its method, or marked so."""
    return marked or method.upper() in IDEMPOTENT


def is_transient(exc: ClientError) -> bool:
    """Whether an error may pass by itself: no answer, or a gateway's 502/503/504."""
    if isinstance(exc, ApiUnreachable):
        return True
    return isinstance(exc, ApiError) and exc.status in RETRY_STATUSES


@dataclass
class Patience:
    """Transient failures in a row, tolerated for up to ``limit_s`` seconds (a long
    watch outlives a gateway's restart). Pure bookkeeping: callers do the waiting."""

    limit_s: float
    _since: float | None = None

    def failed(self, exc: ClientError) -> None:
        """Count a failure: re-raise ``exc`` unless it is transient and the failures in
        a row have not lasted past the limit."""
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if not is_transient(exc) or now - self._since > self.limit_s:
            raise exc

    def ok(self) -> None:
        """A success ends the run of failures."""
        self._since = None

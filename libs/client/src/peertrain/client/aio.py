"""``AsyncClient``: the asyncio SDK (same methods as ``Client``, awaited)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import httpx

from . import calls
from .auth import TokenAuth
from .base import MAX_REDIRECTS, BaseClient
from .calls import Call
from .errors import ApiError, ApiUnreachable, ClientError, DatasetRejected, WaitTimeout
from .jobs import JobProgress, dataset_outcome, rejection_message
from .modules import with_module
from .retry import Patience, RetryPolicy
from .tokens import Tokens, TokenStore
from .upload import DownloadTarget, Progress, ProgressReader, file_part, upload_fields

__all__ = ["AsyncClient"]


class AsyncClient(BaseClient):
    """The PeerTrain API, for asyncio.

    Authenticated calls go through :class:`~peertrain.client.auth.TokenAuth`: a 401
    trades the refresh token for a new pair once (saved to ``token_store``), then
    repeats the call; a second 401 raises.

    Parameters
    ----------
    api_url, tokens, token_store, timeout, retry
        See :class:`~peertrain.client.base.BaseClient`.
    transport
        An httpx transport (tests pass an ``httpx.MockTransport``).

    Examples
    --------
    >>> async with AsyncClient() as pt:  # doctest: +SKIP
    ...     await pt.login("ada", "correct horse battery")
    ...     job_id = await pt.create_job({...})
    """

    def __init__(
        self,
        api_url: str | None = None,
        *,
        tokens: Tokens | None = None,
        token_store: TokenStore | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(
            api_url, tokens=tokens, token_store=token_store, timeout=timeout, retry=retry
        )
        self._http = httpx.AsyncClient(base_url=self.api_url, timeout=timeout, transport=transport)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # -- plumbing ---------------------------------------------------------------------

    async def _send(
        self,
        request: httpx.Request,
        *,
        auth: TokenAuth | None,
        stream: bool = False,
        safe: bool = False,
    ) -> httpx.Response:
        """Send, following same-origin redirects, trying again after a transient
        failure when ``safe`` allows it (see :mod:`peertrain.client.retry`)."""
        attempt = 1
        while True:
            try:
                response = await self._send_once(request, auth=auth, stream=stream)
            except httpx.TransportError as exc:
                delay = self.retry.after_error(exc, attempt, safe=safe)
                if delay is None:
                    raise ApiUnreachable.from_exc(self.api_url, exc) from exc
            else:
                delay = self.retry.after_response(response, attempt, safe=safe)
                if delay is None:
                    return response
                await response.aclose()
            await asyncio.sleep(delay)
            attempt += 1

    async def _send_once(
        self, request: httpx.Request, *, auth: TokenAuth | None, stream: bool
    ) -> httpx.Response:
        response = await self._http.send(request, stream=stream, auth=auth)
        for _ in range(MAX_REDIRECTS):
            target = self._redirect_target(response)
            if target is None:
                break
            await response.aclose()
            request = self._http.build_request(
                request.method, target, headers=request.headers, content=request.content
            )
            response = await self._http.send(request, stream=stream, auth=auth)
        if stream and (response.is_error or response.is_redirect):
            await response.aread()
        return response

    async def _answer(self, call: Call, *, stream: bool = False) -> httpx.Response:
        request = self._build(self._http, call, call.path)
        auth = self._auth_for(call)
        return await self._send(request, auth=auth, stream=stream, safe=self._safe(call))

    async def call(self, call: Call) -> Any:
        """Send one :class:`~peertrain.client.calls.Call` and return its answer."""
        return self._result(call, await self._answer(call))

    async def every(self, call: Call) -> list[dict[str, Any]]:
        """Every item of a list: the page ``call`` answers, then each next page."""
        found: list[dict[str, Any]] = []
        page: Call | None = call
        while page is not None:
            items, page = calls.next_page(page, await self.call(page))
            found += items
        return found

    # -- accounts ---------------------------------------------------------------------

    async def register(self, username: str, password: str) -> dict[str, Any]:
        """Create an account; answers ``{"id", "username", "roles"}``."""
        result: dict[str, Any] = await self.call(calls.register(username, password))
        return result

    async def login(self, username: str, password: str) -> Tokens:
        """Log in with a password; the tokens are kept (and saved to the token store)."""
        tokens = Tokens.from_pair(await self.call(calls.token(username, password)), username)
        self._set_tokens(tokens)
        return tokens

    async def logout(self) -> None:
        """End the session on the server (best effort) and forget the tokens."""
        tokens = self.tokens
        try:
            if tokens is not None and tokens.refresh_token:
                await self.call(calls.logout(tokens.refresh_token))
        finally:
            self._set_tokens(None)

    async def check_reachable(self) -> None:
        """Raise :class:`ApiUnreachable` unless the API answers (any answer will do)."""
        call = calls.health()
        request = self._build(self._http, call, call.path)
        try:  # once: a wrong address should say so at once
            response = await self._http.send(request)
        except httpx.TransportError as exc:
            raise ApiUnreachable.from_exc(self.api_url, exc) from exc
        await response.aclose()

    async def me(self) -> dict[str, Any]:
        """The logged-in user."""
        result: dict[str, Any] = await self.call(calls.me())
        return result

    # -- peers ------------------------------------------------------------------------

    async def create_enrollment(self, ttl_s: int | None = None) -> dict[str, Any]:
        """A one-time token a new peer runtime enrolls with (``enrollment_token``)."""
        result: dict[str, Any] = await self.call(calls.create_enrollment(ttl_s))
        return result

    async def list_peers(self, **filters: Any) -> list[dict[str, Any]]:
        """Peers you may see (filters: ``status``, ``device``, ``min_memory_gb``, ``owner``)."""
        return await self.every(calls.list_peers(**filters))

    async def get_peer(self, peer_id: str) -> dict[str, Any]:
        """One peer."""
        result: dict[str, Any] = await self.call(calls.get_peer(peer_id))
        return result

    async def update_peer(
        self, peer_id: str, *, disabled: bool | None = None, shared: bool | None = None
    ) -> dict[str, Any]:
        """Disable (or enable) or share one of your peers; answers the peer."""
        call = calls.update_peer(peer_id, disabled=disabled, shared=shared)
        result: dict[str, Any] = await self.call(call)
        return result

    async def remove_peer(self, peer_id: str) -> None:
        """Remove one of your peers for good (its broker access ends at once)."""
        await self.call(calls.remove_peer(peer_id))

    # -- datasets ---------------------------------------------------------------------

    async def upload_dataset(
        self,
        path: str | Path,
        *,
        name: str | None = None,
        label_column: str | None = None,
        holdout_fraction: float | None = None,
        image_size: str | None = None,
        image_fit: Literal["crop", "stretch"] | None = None,
        progress: Progress | None = None,
        holdout_seed: int | None = None,
        missing_values: str | Sequence[str] | None = None,
    ) -> str:
        """Stream a ``.csv``, ``.csv.gz`` or ``.zip`` to the dataset service.

        Answers the new dataset's id at once (202); validation follows, see
        :meth:`wait_for_dataset`. ``holdout_seed`` fixes the holdout split (the same
        for every upload of the file); by default each upload draws its own. ``image_size``
        (``"WIDTHxHEIGHT"``) and ``image_fit`` (``crop``, the default: aspect ratio kept,
        centre cut out; or ``stretch``) bring every image of a ``.zip`` to one size.
        ``missing_values`` (tables: a list, or comma-separated text) replaces the cell
        values read as missing (default: empty, NA, N/A, NaN, null, None, ?, -; compared
        trimmed and ignoring case; the empty cell always is one).
        """
        path = Path(path)
        fields = upload_fields(
            name=name,
            label_column=label_column,
            holdout_fraction=holdout_fraction,
            image_size=image_size,
            image_fit=image_fit,
            holdout_seed=holdout_seed,
            missing_values=missing_values,
        )
        call = Call("POST", calls.DATASETS)
        auth = self._auth_for(call)
        # httpx's multipart wants a plain file; it reads 64 KiB chunks of a local disk.
        # It seeks the file back to 0 for each send, so a retry after a refresh (by
        # the auth flow) sends it whole again.
        file = await asyncio.to_thread(path.open, "rb")
        with file:
            reader = ProgressReader(file, progress)
            request = self._http.build_request(
                "POST", calls.DATASETS, data=fields, files=file_part(path, reader)
            )
            response = await self._send(request, auth=auth)
        return str(self._result(call, response)["dataset_id"])

    async def list_datasets(self) -> list[dict[str, Any]]:
        """Your datasets, newest first."""
        return await self.every(calls.list_datasets())

    async def get_dataset(self, dataset_id: str) -> dict[str, Any]:
        """One dataset (``status``: ``validating``, ``validated`` or ``rejected``)."""
        result: dict[str, Any] = await self.call(calls.get_dataset(dataset_id))
        return result

    async def delete_dataset(self, dataset_id: str) -> None:
        """Delete a dataset and its objects (jobs keep their shards)."""
        await self.call(calls.delete_dataset(dataset_id))

    async def preview_dataset(self, dataset_id: str) -> dict[str, Any]:
        """The first rows as uploaded: ``{"kind", "columns", "rows"}``."""
        result: dict[str, Any] = await self.call(calls.preview_dataset(dataset_id))
        return result

    async def wait_for_dataset(
        self,
        dataset_id: str,
        *,
        timeout: float = 600.0,  # noqa: ASYNC109 (the same signature as Client's)
        interval: float = 1.0,
    ) -> dict[str, Any]:
        """Poll until validation ended; the validated dataset, else raises.

        Raises
        ------
        DatasetRejected
            Validation refused the file (the reason is in the message).
        WaitTimeout
            Still validating after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            dataset = await self.get_dataset(dataset_id)
            outcome = dataset_outcome(dataset)
            if outcome == "validated":
                return dataset
            if outcome == "rejected":
                raise DatasetRejected(rejection_message(dataset), dataset)
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"dataset {dataset_id} still validating after {timeout:g}s")
            await asyncio.sleep(interval)

    # -- jobs -------------------------------------------------------------------------

    async def create_job(
        self, spec: Mapping[str, Any], *, model: Any = None, example_input: Any = None
    ) -> str:
        """Submit a training job; answers its id (``model``: see the blocking
        :meth:`peertrain.client.Client.create_job`)."""
        if model is not None:
            spec = with_module(spec, model, example_input)
        answer = await self.call(calls.create_job(spec))
        return str(answer["job_id"])

    async def upload_weights(
        self, source: str | Path | bytes, *, name: str | None = None
    ) -> dict[str, Any]:
        """Upload starting weights (see the blocking client's ``upload_weights``)."""
        data = (
            source
            if isinstance(source, bytes)
            else await asyncio.to_thread(Path(source).read_bytes)
        )
        if name is None and not isinstance(source, bytes):
            name = Path(source).name
        result: dict[str, Any] = await self.call(calls.upload_weights(data, name=name))
        return result

    async def check_job(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """Have the server check a job without creating it (a dry run): answers the job
        it would create (peers in shard order, defaults filled in), else raises the
        error a creation would."""
        result: dict[str, Any] = await self.call(calls.create_job(spec, dry_run=True))
        return result

    async def job_schema(self) -> dict[str, Any]:
        """The JSON Schema of a job request (``job.yaml``)."""
        result: dict[str, Any] = await self.call(calls.job_schema())
        return result

    async def job_config(self, job_id: str) -> dict[str, Any]:
        """The job's ``config.json`` (written once its data is sharded)."""
        result: dict[str, Any] = await self.call(calls.job_config(job_id))
        return result

    async def list_jobs(
        self, *, state: str | None = None, dataset_id: str | None = None, name: str | None = None
    ) -> list[dict[str, Any]]:
        """Your jobs, newest first; only those in ``state``, on ``dataset_id``, with
        ``name`` in their name (any case), when given."""
        return await self.every(calls.list_jobs(state=state, dataset_id=dataset_id, name=name))

    async def get_job(self, job_id: str) -> dict[str, Any]:
        """One job: state, rounds, peers, tasks, ``latest`` metrics, ``error``."""
        result: dict[str, Any] = await self.call(calls.get_job(job_id))
        return result

    async def job_model(self, job_id: str) -> dict[str, Any]:
        """The job's model as built for its data: ``parameters``, ``layers`` (each with
        ``name``, ``op``, ``module``, ``output`` shape and ``parameters``)."""
        result: dict[str, Any] = await self.call(calls.job_model(job_id))
        return result

    async def job_metrics(self, job_id: str) -> dict[str, Any]:
        """``{"rounds": [...], "peers": [...]}``."""
        result: dict[str, Any] = await self.call(calls.job_metrics(job_id))
        return result

    async def job_events(self, job_id: str, *, offset: int = 0) -> list[dict[str, Any]]:
        """A job's events, oldest first (from the ``offset``-th on)."""
        return await self.every(calls.job_events(job_id, offset=offset or None))

    async def cancel_job(self, job_id: str) -> dict[str, Any]:
        """Ask the job to stop (it ends ``cancelled``); answers ``{"job_id", "state"}``."""
        result: dict[str, Any] = await self.call(calls.cancel_job(job_id))
        return result

    async def poll_job(self, job_id: str) -> JobProgress:
        """The job and its metrics, now (no metrics yet counts as none)."""
        job = await self.get_job(job_id)
        try:
            metrics = await self.job_metrics(job_id)
        except ApiError as exc:
            if exc.status != 404:
                raise
            metrics = {}
        return JobProgress(job, metrics)

    async def watch_job(
        self, job_id: str, *, interval: float = 2.0, patience: float = 300.0
    ) -> AsyncIterator[JobProgress]:
        """Poll every ``interval`` seconds; yields each poll, the final state last.

        A transient failure (no answer, a gateway's 502/503/504) that outlasts the
        client's own retries only skips polls, for up to ``patience`` seconds in a row:
        a gateway restarting does not end a long watch.
        """
        failures = Patience(patience)
        while True:
            try:
                progress = await self.poll_job(job_id)
            except ClientError as exc:
                failures.failed(exc)
                await asyncio.sleep(max(interval, 0.05))
                continue
            failures.ok()
            yield progress
            if progress.done:
                return
            await asyncio.sleep(interval)

    # -- models -----------------------------------------------------------------------

    async def model_versions(self, job_id: str) -> dict[str, Any]:
        """``{"job_id", "versions": [...], "final": bool}``."""
        result: dict[str, Any] = await self.call(calls.model_versions(job_id))
        return result

    async def download_model(
        self,
        job_id: str,
        dest: str | Path,
        *,
        version: int | str | None = None,
        fmt: str = "pt",
        progress: Progress | None = None,
    ) -> Path:
        """Stream a model file to ``dest``: the final model, or model ``version`` (a
        number, or ``"best"``: the evaluated version with the highest holdout accuracy),
        as ``pt`` or ``safetensors``.

        The file's sha256 is checked against the one the server announced; nothing is
        left behind when the download fails or does not match.

        Raises
        ------
        ApiError
            ``version_not_found`` (404), ``no_evaluated_version`` (409, for ``"best"``),
            ``final_not_exported`` (409, for the final model), ...
        ChecksumMismatch
            The bytes received are not the ones announced.
        """
        call = calls.model_file(job_id, version, fmt)
        response = await self._answer(call, stream=True)
        try:
            if response.is_error or response.is_redirect:
                raise ApiError.from_response(response)
            with DownloadTarget(Path(dest), response, progress) as target:
                async for chunk in response.aiter_bytes():
                    target.write(chunk)
        except httpx.TransportError as exc:
            raise ApiUnreachable.from_exc(self.api_url, exc) from exc
        finally:
            await response.aclose()
        return Path(dest)

"""Moving bytes with presigned URLs: a checked, size-capped GET and a presigned POST.

The peer holds no storage credentials: it gets a GET URL with the sha256 and size the
bytes must have, and a POST form whose policy pins the key and caps the size.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import httpx

from peertrain.common.events.tasks import Download, UploadForm

from .errors import ChecksumMismatch, DownloadFailed, UploadFailed

__all__ = ["download_to", "upload_form"]

CHUNK = 1024 * 1024


def _what(response: httpx.Response) -> str:
    text = response.text if response.is_closed else ""
    return f"HTTP {response.status_code} {text[:300]}".strip()


def download_to(http: httpx.Client, source: Download, path: Path) -> Path:
    """GET ``source.url`` into ``path`` (streamed), checking its size and sha256.

    Reading stops as soon as more than ``source.size`` bytes arrive. ``path`` is
    removed when anything is wrong.

    Raises
    ------
    DownloadFailed
        The request failed, or the body is longer than announced.
    ChecksumMismatch
        The bytes have another sha256 or size than announced.
    """
    digest = hashlib.sha256()
    received = 0
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with http.stream("GET", source.url) as response, path.open("wb") as out:
            if response.status_code != 200:
                response.read()
                raise DownloadFailed(f"GET {source.key}: {_what(response)}")
            for chunk in response.iter_bytes(CHUNK):
                received += len(chunk)
                if received > source.size:
                    raise ChecksumMismatch(
                        f"{source.key}: more than the announced {source.size} bytes"
                    )
                digest.update(chunk)
                out.write(chunk)
        if received != source.size:
            raise ChecksumMismatch(
                f"{source.key}: {received} bytes received, {source.size} announced"
            )
        if digest.hexdigest() != source.sha256:
            raise ChecksumMismatch(
                f"{source.key}: sha256 mismatch (got {digest.hexdigest()}, "
                f"expected {source.sha256})"
            )
    except httpx.HTTPError as exc:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        raise DownloadFailed(f"GET {source.key}: {exc!r}") from exc
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        raise
    return path


def upload_form(
    http: httpx.Client,
    form: UploadForm,
    data: bytes,
    *,
    filename: str = "update.safetensors",
    content_type: str = "application/octet-stream",
) -> None:
    """POST ``data`` with the presigned form: every field of ``form.fields``, file last.

    Raises
    ------
    UploadFailed
        ``data`` is over ``form.max_bytes``, or the store refused the upload.
    """
    if len(data) > form.max_bytes:
        raise UploadFailed(f"update is {len(data)} bytes, over the {form.max_bytes} allowed")
    # A Content-Type field in the policy must match the file part's content type.
    part_type = form.fields.get("Content-Type", content_type)
    try:
        response = http.post(
            form.url, data=dict(form.fields), files={"file": (filename, data, part_type)}
        )
    except httpx.HTTPError as exc:
        raise UploadFailed(f"POST {form.key}: {exc!r}") from exc
    if response.status_code not in (200, 201, 204):
        raise UploadFailed(f"POST {form.key}: {_what(response)}")

"""Receiving an upload: the form streamed part by part, the file straight to the bucket.

Nothing of the body is held beyond the blob store's one-part buffer. The format is
checked on the file's first bytes before anything is stored; the size cap is enforced
while streaming (413 as soon as it is passed, without reading the rest). The user's
quotas (datasets kept, bytes stored) are checked before the body is read (with the
announced ``Content-Length``), while it streams (the room left caps the stream) and
again just before ``dataset.uploaded`` is appended (403 ``quota_exceeded``). Whatever
goes wrong after the file is stored removes it again, so a refused upload leaves
nothing.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from peertrain.common.blobs import BlobTooLarge
from peertrain.common.events import NewEvent, RecordedEvent
from peertrain.common.events.datasets import ArtifactRef, DatasetUploaded
from peertrain.common.features import parse_missing_values
from peertrain.common.ids import new_id
from peertrain.dataset.domain.dataset import raw_prefix
from peertrain.dataset.domain.errors import InvalidUploadForm, UploadTooLarge
from peertrain.dataset.domain.holdout import MAX_HOLDOUT_SEED
from peertrain.dataset.domain.quota import Usage
from peertrain.dataset.ingest.form import FormPart, StreamingForm, boundary_of
from peertrain.dataset.ingest.formats import SNIFF_BYTES, detect_format

if TYPE_CHECKING:
    from peertrain.dataset.application import DatasetApp


__all__ = ["FORM_FIELDS", "UploadOptions", "receive_upload"]

FORM_FIELDS = (
    "file",
    "label_column",
    "name",
    "holdout_fraction",
    "holdout_seed",
    "image_size",
    "image_fit",
    "missing_values",
)
_FIELD_LIMIT = 1024
_MAX_TOKENS = 50
_FORM_OVERHEAD = 64 * 1024
"""Room for the form's boundaries and small fields on top of the file's cap."""
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class UploadOptions:
    """The form's fields, checked."""

    name: str | None
    label_column: str | None
    holdout_fraction: float
    holdout_seed: int | None
    image_size: tuple[int, int] | None
    image_fit: Literal["stretch", "crop"] = "crop"
    missing_values: tuple[str, ...] | None = None


def safe_filename(filename: str | None) -> str:
    """The last path component, reduced to ``[A-Za-z0-9._-]`` (for the object key)."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _SAFE.sub("_", base).lstrip(".")[:100]
    return cleaned or "upload"


def _options(fields: dict[str, str], default_fraction: float) -> UploadOptions:
    name = fields.get("name", "").strip() or None
    label = fields.get("label_column", "").strip() or None
    fraction = default_fraction
    if "holdout_fraction" in fields:
        try:
            fraction = float(fields["holdout_fraction"])
        except ValueError:
            fraction = math.nan
        if not 0 < fraction <= 0.5:
            raise InvalidUploadForm(
                "holdout_fraction must be a number in (0, 0.5]",
                detail={"field": "holdout_fraction"},
            )
    seed: int | None = None
    if fields.get("holdout_seed", "").strip():
        text = fields["holdout_seed"].strip()
        seed = int(text) if re.fullmatch(r"[0-9]{1,19}", text) else -1
        if not 0 <= seed <= MAX_HOLDOUT_SEED:
            raise InvalidUploadForm(
                f"holdout_seed must be an integer in [0, {MAX_HOLDOUT_SEED}]",
                detail={"field": "holdout_seed"},
            )
    size: tuple[int, int] | None = None
    if fields.get("image_size", "").strip():
        match = re.fullmatch(r"\s*(\d{1,4})\s*[xX,]\s*(\d{1,4})\s*", fields["image_size"])
        if not match or min(int(match[1]), int(match[2])) < 1:
            raise InvalidUploadForm(
                "image_size must be WIDTHxHEIGHT, e.g. 28x28", detail={"field": "image_size"}
            )
        size = (int(match[1]), int(match[2]))
    fit = fields.get("image_fit", "").strip() or "crop"
    if fit not in ("stretch", "crop"):
        raise InvalidUploadForm(
            "image_fit must be crop (keep the aspect ratio, cut the centre) or stretch",
            detail={"field": "image_fit"},
        )
    if name is not None and len(name) > 200:
        raise InvalidUploadForm("name is longer than 200 characters", detail={"field": "name"})
    missing = parse_missing_values(fields["missing_values"]) if "missing_values" in fields else None
    if missing is not None and (len(missing) > _MAX_TOKENS or max(map(len, missing)) > 100):
        raise InvalidUploadForm(
            f"missing_values takes at most {_MAX_TOKENS} values of at most 100 characters",
            detail={"field": "missing_values"},
        )
    return UploadOptions(
        name, label, fraction, seed, size, "crop" if fit == "crop" else "stretch", missing
    )


async def _prefix(chunks: AsyncIterator[bytes]) -> tuple[bytes, bool]:
    """Up to :data:`SNIFF_BYTES` from the start (more if a chunk overshoots); and whether
    that is everything."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        if len(buffer) >= SNIFF_BYTES:
            return bytes(buffer), False
    return bytes(buffer), True


async def _store_file(
    app: DatasetApp, part: FormPart, dataset_id: str, usage: Usage
) -> tuple[ArtifactRef, str]:
    cap = app.settings.max_upload_bytes
    limit = min(cap, app.quota.room(usage))

    def too_large() -> Exception:  # past the file cap (413), or past the quota (403)
        return UploadTooLarge(cap) if limit == cap else app.quota.bytes_exceeded(usage, limit + 1)

    filename = part.filename or "upload"
    chunks = part.data()
    prefix, complete = await _prefix(chunks)
    detect_format(prefix[:SNIFF_BYTES], complete=complete, name=filename)
    if len(prefix) > limit:
        raise too_large()

    async def body() -> AsyncIterator[bytes]:
        yield prefix
        async for chunk in chunks:
            yield chunk

    key = f"{raw_prefix(dataset_id)}raw/{safe_filename(filename)}"
    try:
        result = await app.blobs.put_stream(key, body(), max_bytes=limit)
    except BlobTooLarge:
        raise too_large() from None
    return ArtifactRef(key=key, sha256=result.sha256, size=result.size), filename


async def receive_upload(
    app: DatasetApp,
    body: AsyncIterator[bytes],
    *,
    content_type: str | None,
    content_length: int | None,
    owner_id: str,
) -> RecordedEvent:
    """Stream one upload into the bucket and append ``dataset.uploaded``.

    Raises
    ------
    UnsupportedMediaType, UploadTooLarge, DatasetQuotaExceeded, InvalidUploadForm, InvalidDataset
        The upload is refused; nothing of it is stored.
    """
    boundary = boundary_of(content_type)
    cap = app.settings.max_upload_bytes
    if content_length is not None and content_length > cap + _FORM_OVERHEAD:
        raise UploadTooLarge(cap)
    usage = await app.views.usage(owner_id)
    announced = max(0, (content_length or 0) - _FORM_OVERHEAD)  # the file's least size
    app.quota.check(usage, announced)
    dataset_id = new_id()
    form = StreamingForm(body, boundary)
    fields: dict[str, str] = {}
    raw: ArtifactRef | None = None
    filename = "upload"
    try:
        while (part := await form.next_part()) is not None:
            if part.name not in FORM_FIELDS:
                raise InvalidUploadForm(
                    f"unknown form field {part.name!r}", detail={"allowed": list(FORM_FIELDS)}
                )
            if part.name in fields or (part.name == "file" and raw is not None):
                raise InvalidUploadForm(f"form field {part.name!r} is given twice")
            if part.name == "file":
                raw, filename = await _store_file(app, part, dataset_id, usage)
            else:
                fields[part.name] = await part.text(_FIELD_LIMIT)
        if raw is None:
            raise InvalidUploadForm("the form has no 'file' part", detail={"field": "file"})
        options = _options(fields, app.settings.default_holdout_fraction)
        uploaded = DatasetUploaded(
            dataset_id=dataset_id,
            owner_id=owner_id,
            name=options.name or filename[:200] or dataset_id,
            filename=filename[:255],
            raw=raw,
            label_column=options.label_column,
            holdout_fraction=options.holdout_fraction,
            holdout_seed=options.holdout_seed,
            image_size=options.image_size,
            image_fit=options.image_fit,
            missing_values=options.missing_values,
        )
        event = NewEvent.of(
            uploaded, producer=app.producer, actor=owner_id, correlation_id=dataset_id
        )
        async with app.owner_lock(owner_id):  # other uploads of the user finished meanwhile
            app.quota.check(await app.views.usage(owner_id), raw.size)
            saved = await app.execute(dataset_id, lambda _: [event], new=True, retries=0)
    except BaseException:
        if raw is not None:
            await asyncio.shield(app.blobs.delete(raw.key))
        raise
    return saved.events[0]

"""Presigned GET URLs and POST forms: what peers get instead of credentials."""

from __future__ import annotations

from typing import Any

from peertrain.common.blobs.models import PresignedPost

__all__ = [
    "DEFAULT_PRESIGN_EXPIRES_S",
    "MAX_PRESIGN_EXPIRES_S",
    "check_expiry",
    "check_size_range",
    "presign_get",
    "presign_post",
]

DEFAULT_PRESIGN_EXPIRES_S = 300
"""Short by default: a URL is handed out for one task, not kept."""
MAX_PRESIGN_EXPIRES_S = 7 * 24 * 3600
"""SigV4's upper bound on the validity of a presigned request."""


def check_expiry(expires_s: int) -> None:
    """Raise `ValueError` unless ``expires_s`` is a validity SigV4 can sign."""
    if not 1 <= expires_s <= MAX_PRESIGN_EXPIRES_S:
        raise ValueError(f"expires_s must be in 1..{MAX_PRESIGN_EXPIRES_S}, got {expires_s}")


def check_size_range(min_bytes: int, max_bytes: int) -> None:
    """Raise `ValueError` unless ``0 <= min_bytes <= max_bytes``."""
    if not 0 <= min_bytes <= max_bytes:
        raise ValueError(f"need 0 <= min_bytes <= max_bytes, got {min_bytes}, {max_bytes}")


async def presign_get(client: Any, bucket: str, key: str, *, expires_s: int) -> str:
    """Return a SigV4 presigned ``GET`` URL for ``key``, valid ``expires_s`` seconds."""
    check_expiry(expires_s)
    url = await client.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=expires_s
    )
    return str(url)


async def presign_post(
    client: Any,
    bucket: str,
    key: str,
    *,
    max_bytes: int,
    min_bytes: int,
    expires_s: int,
    content_type: str | None,
) -> PresignedPost:
    """Return a presigned POST form for exactly ``key``, with a content-length range.

    A presigned PUT cannot bound the body size; the POST policy's
    ``content-length-range`` condition can, and the store enforces it.
    """
    check_expiry(expires_s)
    check_size_range(min_bytes, max_bytes)
    fields: dict[str, str] = {}
    conditions: list[Any] = [["content-length-range", min_bytes, max_bytes]]
    if content_type is not None:
        fields["Content-Type"] = content_type
        conditions.append({"Content-Type": content_type})
    form = await client.generate_presigned_post(
        Bucket=bucket, Key=key, Fields=fields, Conditions=conditions, ExpiresIn=expires_s
    )
    return {
        "url": str(form["url"]),
        "fields": {str(name): str(value) for name, value in form["fields"].items()},
    }

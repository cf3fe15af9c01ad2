"""The aiobotocore S3 client(s) a `BlobStore` owns, configured for S3 and MinIO."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from aiobotocore.config import AioConfig
from aiobotocore.session import get_session

from peertrain.common.blobs.config import BlobStoreConfig

__all__ = ["open_clients"]


def _client_context(session: Any, config: BlobStoreConfig, endpoint_url: str) -> Any:
    return session.create_client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=config.region,
        aws_access_key_id=config.access_key,
        aws_secret_access_key=config.secret_key.get_secret_value(),
        config=AioConfig(
            # SigV4 + path style: presigned URLs then work against MinIO on an IP
            # and port exactly as against S3.
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            connect_timeout=config.connect_timeout_s,
            read_timeout=config.read_timeout_s,
            retries={"max_attempts": config.max_attempts, "mode": "standard"},
            max_pool_connections=config.max_pool_connections,
            # We hash bodies ourselves (SHA-256); skip botocore's extra CRC pass.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        ),
    )


async def open_clients(stack: AsyncExitStack, config: BlobStoreConfig) -> tuple[Any, Any]:
    """Open the S3 client and the presigning client on ``stack``.

    Returns
    -------
    tuple
        ``(client, presigner)``; the same client twice unless
        ``config.presign_endpoint_url`` names another endpoint. Presigning makes no
        request, so the second client never needs to reach its endpoint.
    """
    session = get_session()
    client = await stack.enter_async_context(_client_context(session, config, config.endpoint_url))
    public = config.presign_endpoint_url
    if not public or public == config.endpoint_url:
        return client, client
    presigner = await stack.enter_async_context(_client_context(session, config, public))
    return client, presigner

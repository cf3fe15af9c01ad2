"""Settings values a `BlobStore` is built from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr

__all__ = ["MIN_PART_SIZE", "BlobStoreConfig"]

MiB = 1024 * 1024
MIN_PART_SIZE = 5 * MiB
"""S3's smallest allowed multipart part (every part but the last)."""


class BlobStoreConfig(BaseModel):
    """Where the object store is and how to talk to it.

    Plain values only: the settings module of each service maps its environment to
    this model. Defaults point at the local MinIO.

    Parameters
    ----------
    endpoint_url
        S3 endpoint the service talks to, e.g. ``http://127.0.0.1:9000``.
    access_key, secret_key
        Credentials (MinIO root user locally).
    region
        Signing region; MinIO accepts ``us-east-1``.
    bucket
        The one bucket PeerTrain uses.
    presign_endpoint_url
        Endpoint written into presigned URLs when peers reach the store under another
        name than the service does (compose: ``http://minio:9000`` inside, a public
        host outside). ``None`` means the same as ``endpoint_url``. A SigV4 signature
        covers the host, so a presigned URL cannot be rewritten afterwards.
    part_size
        Multipart part size for streaming uploads; also the size of the upload buffer.
    connect_timeout_s, read_timeout_s
        Socket timeouts of the HTTP client.
    max_attempts
        Total attempts per request (botocore "standard" retry mode).
    max_pool_connections
        Size of the HTTP connection pool.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint_url: str = "http://127.0.0.1:9000"
    access_key: str = "minioadmin"
    secret_key: SecretStr = SecretStr("minioadmin")
    region: str = "us-east-1"
    bucket: str = Field(default="peertrain", min_length=3, max_length=63)
    presign_endpoint_url: str | None = None
    part_size: int = Field(default=8 * MiB, ge=MIN_PART_SIZE, le=5 * 1024 * MiB)
    connect_timeout_s: float = Field(default=5.0, gt=0)
    read_timeout_s: float = Field(default=60.0, gt=0)
    max_attempts: int = Field(default=3, ge=1)
    max_pool_connections: int = Field(default=10, ge=1)

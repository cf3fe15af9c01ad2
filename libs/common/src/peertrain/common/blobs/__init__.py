"""Blob store: PeerTrain's S3 bucket (MinIO locally) on aiobotocore.

Streaming uploads and downloads with SHA-256 computed on the way, presigned GET
URLs and size-capped presigned POST forms for peers, typed errors; the same bucket in
memory (`MemoryBlobStore`) for one process.
"""

from peertrain.common.blobs.config import MIN_PART_SIZE, BlobStoreConfig
from peertrain.common.blobs.errors import (
    BlobError,
    BlobNotFound,
    BlobStoreUnavailable,
    BlobTooLarge,
    InvalidBlobKey,
)
from peertrain.common.blobs.memory import MemoryBlobStore
from peertrain.common.blobs.models import BlobDigest, BlobInfo, PresignedPost, PutResult
from peertrain.common.blobs.presign import DEFAULT_PRESIGN_EXPIRES_S, MAX_PRESIGN_EXPIRES_S
from peertrain.common.blobs.store import DEFAULT_CHUNK_SIZE, BlobStore

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_PRESIGN_EXPIRES_S",
    "MAX_PRESIGN_EXPIRES_S",
    "MIN_PART_SIZE",
    "BlobDigest",
    "BlobError",
    "BlobInfo",
    "BlobNotFound",
    "BlobPort",
    "BlobStore",
    "BlobStoreConfig",
    "BlobStoreUnavailable",
    "BlobTooLarge",
    "InvalidBlobKey",
    "MemoryBlobStore",
    "PresignedPost",
    "PutResult",
]

BlobPort = BlobStore | MemoryBlobStore
"""The blob store an application keeps objects in: S3 (MinIO), or in memory."""

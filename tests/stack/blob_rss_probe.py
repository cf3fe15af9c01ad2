"""Stream a large deterministic object up and down; print sha256s and peak RSS as JSON.

Run in a fresh interpreter by ``test_blobs.py`` so that the peak RSS it reports
belongs to the streaming alone (plus imports), not to pytest or to other tests::

    python tests/stack/blob_rss_probe.py KEY SIZE_BYTES SCRATCH_DIR

The S3 settings come from the ``PEERTRAIN_S3_*`` environment, as for the test process
(defaults: the local MinIO). The body is produced chunk by chunk from a seeded
generator and never held in memory as a whole.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import resource
import sys
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

from peertrain.common.blobs import BlobStore, BlobStoreConfig
from peertrain.common.settings import ServiceSettings

# Odd chunk sizes, so parts are cut across chunk boundaries.
CHUNK_SIZES = (1_000_003, 65_537, 3 * 1024 * 1024 + 7, 17)


def config_from_env() -> BlobStoreConfig:
    settings = ServiceSettings()  # PEERTRAIN_S3_* as in the test process
    return BlobStoreConfig(
        endpoint_url=settings.s3_endpoint_url,
        access_key=settings.s3_access_key,
        secret_key=settings.s3_secret_key,
        region=settings.s3_region,
        bucket=settings.s3_bucket,
    )


async def deterministic_body(size: int, seed: int, digest: hashlib._Hash) -> AsyncIterator[bytes]:
    rng = random.Random(seed)
    sent = 0
    i = 0
    while sent < size:
        n = min(CHUNK_SIZES[i % len(CHUNK_SIZES)], size - sent)
        chunk = rng.randbytes(n)
        digest.update(chunk)
        sent += n
        i += 1
        yield chunk


def peak_rss_bytes() -> int:
    """Peak RSS of this process since its exec (``VmHWM``).

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries the parent's high-water
    mark over ``fork``/``vfork`` + ``exec`` into it, so under pytest it reports the
    size of the pytest process rather than ours.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def inherited_maxrss_bytes() -> int:
    """``ru_maxrss`` for the record (an upper bound, see `peak_rss_bytes`)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


async def main(key: str, size: int, scratch: Path) -> dict[str, object]:
    async with BlobStore(config_from_env()) as blobs:
        await blobs.check()
        rss_ready = peak_rss_bytes()
        expected = hashlib.sha256()
        put = await blobs.put_stream(
            key, deterministic_body(size, 1234, expected), content_type="application/octet-stream"
        )
        rss_after_put = peak_rss_bytes()

        streamed = hashlib.sha256()
        streamed_size = 0
        async with aclosing(blobs.get_stream(key)) as chunks:
            async for chunk in chunks:
                streamed.update(chunk)
                streamed_size += len(chunk)

        target = scratch / "download.bin"
        downloaded = await blobs.download_to(key, target)
        file_size = target.stat().st_size
        target.unlink()

        listed = [info.size for info in await blobs.list(key)]
    return {
        "expected_sha256": expected.hexdigest(),
        "put_size": put.size,
        "put_sha256": put.sha256,
        "stream_size": streamed_size,
        "stream_sha256": streamed.hexdigest(),
        "download_size": downloaded.size,
        "download_sha256": downloaded.sha256,
        "file_size": file_size,
        "listed_sizes": listed,
        "peak_rss_ready_bytes": rss_ready,
        "peak_rss_after_put_bytes": rss_after_put,
        "peak_rss_bytes": peak_rss_bytes(),
        "ru_maxrss_bytes": inherited_maxrss_bytes(),
    }


if __name__ == "__main__":
    result = asyncio.run(main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])))
    print(json.dumps(result))

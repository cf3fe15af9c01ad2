"""Which model version a download means, and the name of the file it is saved as.

Pure: a :class:`~peertrain.aggregator.domain.state.JobMemory`'s versions in, a version
number or a typed error out.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Literal

from .errors import NoEvaluatedVersion, VersionNotFound
from .state import VersionInfo

__all__ = ["BEST", "Which", "best_version", "download_name", "pick_version"]

BEST: Literal["best"] = "best"
"""The version with the highest holdout accuracy (see :func:`best_version`)."""
Which = int | Literal["best"]
"""A version number, or :data:`BEST`."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def best_version(versions: Mapping[int, VersionInfo]) -> int | None:
    """The evaluated version with the highest holdout accuracy; ``None`` when none is
    evaluated yet.

    Only evaluated versions compete: one still waiting for its evaluation, or found
    non-finite (diverged), is never the best. Ties on accuracy go to the lower holdout
    loss, then to the later version (the one trained longer).
    """
    scored = [
        (info.evaluation.accuracy, -info.evaluation.loss, number)
        for number, info in versions.items()
        if info.evaluation is not None and info.diverged is None
    ]
    return max(scored)[2] if scored else None


def pick_version(versions: Mapping[int, VersionInfo], which: Which) -> int:
    """The version number ``which`` means.

    Raises
    ------
    VersionNotFound
        No version of that number (yet).
    NoEvaluatedVersion
        ``which`` is :data:`BEST` and no version is evaluated yet.
    """
    if isinstance(which, str):  # BEST
        best = best_version(versions)
        if best is None:
            raise NoEvaluatedVersion(
                "no model version is evaluated yet, so there is no best one",
                detail={"versions": sorted(versions)},
            )
        return best
    if which not in versions:
        raise VersionNotFound(
            f"no model version {which}",
            detail={"version": which, "versions": sorted(versions)},
        )
    return which


def download_name(job_name: str | None, job_id: str, version: int, fmt: str) -> str:
    """``<job name>-v<version>.<fmt>``: the name reduced to ASCII letters (accents
    dropped), digits, ``.``, ``_`` and ``-``, safe in a header and on any file system;
    the job id when nothing of the name is left."""
    ascii_name = unicodedata.normalize("NFKD", job_name or "").encode("ascii", "ignore").decode()
    stem = _UNSAFE.sub("-", ascii_name).strip(".-_")[:80] or job_id
    return f"{stem}-v{version}.{fmt}"

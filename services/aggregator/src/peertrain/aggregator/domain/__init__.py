"""The aggregator's pure core: a job's state folded from the log, and update decisions."""

from . import codes
from .decide import Candidate, Decision, Duplicate, Ignored, Refusal, decide_update
from .errors import (
    AggregatorError,
    FinalNotExported,
    JobNotFound,
    NoEvaluatedVersion,
    UpdateRefused,
    VersionNotFound,
)
from .norms import clip_factors, clip_scale
from .selection import BEST, Which, best_version, download_name, pick_version
from .state import JobMemory, RoundKey, VersionInfo

__all__ = [
    "BEST",
    "AggregatorError",
    "Candidate",
    "Decision",
    "Duplicate",
    "FinalNotExported",
    "Ignored",
    "JobMemory",
    "JobNotFound",
    "NoEvaluatedVersion",
    "Refusal",
    "RoundKey",
    "UpdateRefused",
    "VersionInfo",
    "VersionNotFound",
    "Which",
    "best_version",
    "clip_factors",
    "clip_scale",
    "codes",
    "decide_update",
    "download_name",
    "pick_version",
]

"""The aggregator's pure core: a job's state folded from the log, and update decisions."""

from . import codes
from .decide import Candidate, Decision, Duplicate, Ignored, Refusal, decide_update
from .errors import (
    AggregatorError,
    FinalNotExported,
    JobNotFound,
    UpdateRefused,
)
from .norms import clip_factors
from .state import JobState, RoundKey, VersionInfo

__all__ = [
    "AggregatorError",
    "Candidate",
    "Decision",
    "Duplicate",
    "FinalNotExported",
    "Ignored",
    "JobNotFound",
    "JobState",
    "Refusal",
    "RoundKey",
    "UpdateRefused",
    "VersionInfo",
    "clip_factors",
    "codes",
    "decide_update",
]

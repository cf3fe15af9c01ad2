"""Per-user storage quotas: how many datasets, and how many uploaded bytes, a user keeps.

Pure: the shell counts the user's datasets that are not deleted (from the read model)
into a :class:`Usage` and asks :class:`Quota` before, while and after an upload streams.
"""

from __future__ import annotations

from dataclasses import dataclass

from peertrain.dataset.domain.errors import DatasetQuotaExceeded

__all__ = ["Quota", "Usage"]


@dataclass(frozen=True)
class Usage:
    """What a user keeps now: datasets not deleted, and their uploaded bytes."""

    datasets: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class Quota:
    """The caps of one user (see ``DatasetSettings.max_datasets_per_user`` and
    ``max_bytes_per_user``)."""

    max_datasets: int
    max_bytes: int

    def room(self, usage: Usage) -> int:
        """Bytes a new upload may still hold."""
        return max(0, self.max_bytes - usage.bytes)

    def check(self, usage: Usage, incoming: int = 0) -> None:
        """Refuse (:class:`DatasetQuotaExceeded`) one more dataset of ``incoming`` bytes.

        Parameters
        ----------
        usage
            What the user keeps now (the new dataset not included).
        incoming
            The new dataset's size, or a lower bound of it (0 when unknown yet).
        """
        if usage.datasets >= self.max_datasets:
            raise DatasetQuotaExceeded(
                f"you keep {usage.datasets} datasets, the most allowed: delete one first",
                quota="datasets",
                limit=self.max_datasets,
                used=usage.datasets,
            )
        if usage.bytes + incoming > self.max_bytes or usage.bytes >= self.max_bytes:
            raise self.bytes_exceeded(usage, incoming)

    def bytes_exceeded(self, usage: Usage, incoming: int) -> DatasetQuotaExceeded:
        """The refusal of ``incoming`` more bytes (at least that many, while streaming)."""
        return DatasetQuotaExceeded(
            f"this upload would take your datasets past {self.max_bytes} bytes: delete some first",
            quota="bytes",
            limit=self.max_bytes,
            used=usage.bytes,
            incoming=incoming,
        )

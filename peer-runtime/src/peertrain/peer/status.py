"""The runtime's status file, written while it runs, read by ``peertrain-peer status``."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .files import STATUS_FILE, read_model, write_json
from .identity import RuntimeStatus

__all__ = ["StatusReporter", "load_status"]


def load_status(config_dir: Path) -> RuntimeStatus | None:
    """The last status a runtime wrote (``None`` if it never ran)."""
    return read_model(config_dir, STATUS_FILE, RuntimeStatus, secret=False)


@dataclass
class StatusReporter:
    """Keeps ``status.json`` current (small, atomic writes; at most one per heartbeat)."""

    config_dir: Path
    session: str
    status: RuntimeStatus = field(init=False)

    def __post_init__(self) -> None:
        now = datetime.now(UTC)
        self.status = RuntimeStatus(
            pid=os.getpid(), session=self.session, started_at=now, state="starting", updated_at=now
        )
        self.write()

    def update(self, **changes: object) -> None:
        """Change fields and write the file (with what :meth:`note` changed since)."""
        self.status = self.status.model_copy(update={**changes, "updated_at": datetime.now(UTC)})
        self.write()

    def note(self, **changes: object) -> None:
        """Change fields without writing: they reach the file with the next
        :meth:`update` (a heartbeat at the latest). For counters that move with every
        message, which would otherwise rewrite the file as often."""
        self.status = self.status.model_copy(update=changes)

    def write(self) -> None:
        """Write the file (errors are ignored: status is informative)."""
        with contextlib.suppress(OSError):
            write_json(self.config_dir, STATUS_FILE, self.status.model_dump(mode="json"))

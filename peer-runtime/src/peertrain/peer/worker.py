"""The worker: a thread that does the work, so a long task never stalls the listener.

The listener hands over each message it accepted with :meth:`Worker.submit` and never
waits for it. A :class:`WorkItem` parses its body once, when it is made: the worker, its
queue and the trainer all read that one typed message. Tasks queue up and run one at a
time on the worker's thread (through the :class:`~peertrain.peer.trainer.Trainer`, when
there is one). A cancel never queues
behind the task it cancels: :meth:`Worker.submit` handles it at once, on the caller's
thread, by dropping the job's queued tasks and setting the running one's stop flag.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import structlog
from pydantic import ValidationError

from peertrain.common.events.tasks import CANCEL, TASK, CancelMessage, TaskMessage

if TYPE_CHECKING:
    from .trainer import Trainer

__all__ = ["WorkItem", "Worker"]

log = structlog.get_logger(__name__)


_MESSAGES: dict[str, type[TaskMessage] | type[CancelMessage]] = {
    TASK: TaskMessage,
    CANCEL: CancelMessage,
}


def _kind(routing_key: str) -> str:
    return routing_key.rsplit(".", 1)[-1] if routing_key.count(".") >= 2 else ""


def _parse(routing_key: str, body: bytes) -> TaskMessage | CancelMessage | None:
    """The body as the message its kind names (``None``: another kind, or malformed,
    which is logged)."""
    kind = _kind(routing_key)
    model = _MESSAGES.get(kind)
    if model is None:
        return None
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        fields = [".".join(map(str, e["loc"])) for e in exc.errors()][:10]
        log.warning(
            f"malformed {kind} dropped",
            routing_key=routing_key,
            errors=exc.error_count(),
            fields=fields,
        )
        return None


@dataclass(frozen=True)
class WorkItem:
    """A message from the peer's own queue, parsed once (:attr:`message`)."""

    routing_key: str
    body: bytes
    message_id: str | None = None
    received_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    message: TaskMessage | CancelMessage | None = field(init=False, repr=False, compare=False)
    """The body as its kind's message; ``None`` for another kind or a malformed body."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", _parse(self.routing_key, self.body))

    @property
    def kind(self) -> str:
        """The last part of the routing key ``peer.<id>.<kind>`` (``task``, ``cancel``)."""
        return _kind(self.routing_key)

    @property
    def task(self) -> TaskMessage | None:
        """The task, for a well-formed ``task`` item."""
        return self.message if isinstance(self.message, TaskMessage) else None


class Worker:
    """Runs work items one at a time on its own thread.

    Parameters
    ----------
    trainer
        Runs ``task`` items and is told of ``cancel`` ones; without it items are
        only logged.
    """

    def __init__(self, trainer: Trainer | None = None) -> None:
        self.trainer = trainer
        self._items: deque[WorkItem] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.handled = 0

    def start(self) -> None:
        """Start the thread."""
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="peertrain-worker", daemon=True)
            self._thread.start()

    def submit(self, item: WorkItem) -> None:
        """Queue ``item`` (returns at once); a cancel is handled here and now."""
        if item.kind == CANCEL:
            self.cancel(item)
            return
        if item.kind == TASK and self._duplicate(item):
            return
        with self._cond:
            self._items.append(item)
            self._cond.notify()

    def cancel(self, item: WorkItem) -> None:
        """Drop the job's queued tasks and stop its running one (any thread)."""
        msg = item.message
        if not isinstance(msg, CancelMessage):
            return  # malformed: logged when parsed

        def matches(queued: WorkItem) -> bool:
            task = queued.task
            return (
                task is not None
                and task.job_id == msg.job_id
                and (msg.task_id is None or task.task_id == msg.task_id)
            )

        with self._cond:
            kept = [q for q in self._items if not matches(q)]
            dropped = len(self._items) - len(kept)
            self._items = deque(kept)
        stopped = self.trainer.cancel(msg.job_id, msg.task_id) if self.trainer else False
        log.info(
            "cancel received",
            job_id=msg.job_id,
            task_id=msg.task_id,
            reason=msg.reason,
            queued_dropped=dropped,
            running_stopped=stopped,
        )

    def _duplicate(self, item: WorkItem) -> bool:
        if item.task is None:
            return False
        task_id = item.task.task_id
        running = self.trainer.running_task() if self.trainer else None
        with self._cond:
            queued = any(q.task is not None and q.task.task_id == task_id for q in self._items)
        if running == task_id or queued:
            log.info("task delivered again while running or queued: ignored", task_id=task_id)
            return True
        return False

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the current item and stop (items still queued are dropped)."""
        if self._thread is not None:
            with self._cond:
                self._stopping = True
                self._items.clear()
                self._cond.notify()
            self._thread.join(timeout_s)
            self._thread = None

    @property
    def backlog(self) -> int:
        """Items waiting."""
        with self._cond:
            return len(self._items)

    def _next(self) -> WorkItem | None:
        with self._cond:
            while not self._items and not self._stopping:
                self._cond.wait()
            if self._stopping:
                return None
            return self._items.popleft()

    def _run(self) -> None:
        while (item := self._next()) is not None:
            try:
                self.handle(item)
            except Exception:
                log.exception("work item failed", routing_key=item.routing_key)
            self.handled += 1

    def handle(self, item: WorkItem) -> None:
        """Do the work: a task goes to the trainer; anything else is logged."""
        log.info(
            "work item received",
            routing_key=item.routing_key,
            message_id=item.message_id,
            kind=item.kind,
            size=len(item.body),
        )
        if self.trainer is not None and item.task is not None:
            self.trainer.run(item.task)

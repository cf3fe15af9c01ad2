"""Retrying a failed message, or giving it up: set aside (requeued) or dead-lettered.

:class:`RetryMiddleware` runs the rest of a delivery (decoding, the handler) and, when
it raises, asks :func:`~.failures.decide` what to do: try again in place after a delay
(a dependency is away: the outage budget, :class:`~.failures.Outage`), set the message
aside (nack, requeued) or dead-letter it (reject) on the last delivery the queue allows.
Deliveries before this one (set aside, a crash, a restart) count: the quorum queue's
``x-delivery-count`` header. A ``RejectMessage`` (a malformed message) passes straight
through: dead-lettered at once; so does a ``NackMessage`` (a message the handler hands
back to its queue for another instance: ``security.PassOn``).
"""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

import structlog
from faststream import BaseMiddleware, ContextRepo
from faststream._internal.basic_types import AsyncFuncAny
from faststream.exceptions import NackMessage, RejectMessage
from faststream.message import StreamMessage

from peertrain.common.faults import is_transient
from peertrain.common.metrics import DEAD_LETTERED, EVENTS_CONSUMED

from .failures import DeadLetter, Failure, Outage, Retry, SetAside, decide

__all__ = ["RetryMiddleware", "delivery_count"]

log = structlog.get_logger(__name__)


def delivery_count(message: StreamMessage[Any]) -> int:
    """How many times the queue delivered ``message`` before (0 the first time)."""
    count = (message.headers or {}).get("x-delivery-count", 0)
    return count if isinstance(count, int) and count >= 0 else 0


class RetryMiddleware(BaseMiddleware):
    """Retry, set aside or dead-letter the deliveries of one queue.

    Parameters
    ----------
    queue
        The queue (logs and metrics).
    delivery_limit
        The queue's delivery limit.
    outage
        The queue's outage state, shared by its deliveries.
    """

    def __init__(
        self,
        msg: Any,
        /,
        *,
        context: ContextRepo,
        queue: str,
        delivery_limit: int,
        outage: Outage,
    ) -> None:
        super().__init__(msg, context=context)
        self.queue = queue
        self.delivery_limit = delivery_limit
        self.outage = outage

    async def consume_scope(self, call_next: AsyncFuncAny, msg: StreamMessage[Any]) -> Any:
        """Hand the message on until it passes, or give it up."""
        loop = asyncio.get_running_loop()
        deliveries = delivery_count(msg)
        tries, first_failure = 0, 0.0
        while True:
            try:
                result = await call_next(msg)
            except (RejectMessage, NackMessage):  # the handler's own decision
                raise
            except Exception as exc:
                now = loop.time()
                tries, first_failure = tries + 1, first_failure or now
                failure = Failure(is_transient(exc), deliveries, tries, now - first_failure)
                decision = decide(failure, self.outage, delivery_limit=self.delivery_limit, now=now)
                if isinstance(decision, Retry):
                    await asyncio.sleep(decision.delay_s)
                    continue
                self._give_up(decision, failure, exc)
            else:
                if self.outage.since is not None:
                    log.info(
                        "a dependency is back",
                        queue=self.queue,
                        waited_s=round(self.outage.age(loop.time()), 3),
                    )
                self.outage.passed()
                return result

    def _give_up(
        self, decision: SetAside | DeadLetter, failure: Failure, exc: Exception
    ) -> NoReturn:
        """Set the message aside (nack, requeued) or dead-letter it (reject), logged."""
        detail = {
            "queue": self.queue,
            "delivery": failure.deliveries + 1,
            "reason": decision.reason,
            "error": repr(exc)[:500],
        }
        if isinstance(decision, SetAside):
            EVENTS_CONSUMED.labels(queue=self.queue, outcome="set_aside").inc()
            log.warning("setting a failed message aside", **detail)
            raise NackMessage(requeue=True) from exc
        DEAD_LETTERED.labels(queue=self.queue).inc()
        log.error("dead-lettering a message that kept failing", **detail)
        raise RejectMessage() from exc

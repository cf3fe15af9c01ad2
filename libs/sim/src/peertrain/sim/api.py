"""``peertrain.sim.run``: one simulated job, from a spec and data to metrics and weights."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import structlog
import torch

from peertrain.common.specs import AggregationSpec
from peertrain.ml.device import limit_threads

from .data import SimData, load_data
from .engine import RoundMetrics, SimResult, Simulation
from .peers import Volunteers
from .spec import JobSpec, parse_job_spec
from .training import make_pool

__all__ = ["quiet_logs", "run"]


def quiet_logs(level: int = logging.ERROR) -> None:
    """Keep the services' per-event logs out of a simulation's output (unless the
    process configured structlog itself)."""
    if not structlog.is_configured():
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))


def run(
    spec: JobSpec | dict[str, Any] | None,
    data: SimData | str | Path,
    *,
    peers: int,
    label_column: str | None = None,
    peers_per_round: int | None = None,
    volunteers: Volunteers | None = None,
    workers: int = 0,
    threads: int | None = None,
    device: str | None = None,
    on_round: Callable[[RoundMetrics], None] | None = None,
    init_weights: bytes | Path | None = None,
) -> SimResult:
    """Simulate one job on ``peers`` virtual peers; its per-round metrics and weights.

    Parameters
    ----------
    spec
        The job's ``model``, ``training``, ``aggregation`` and ``sharding`` blocks (a
        platform job file's other keys are ignored).
    data
        A ``.csv`` or ``.zip`` (prepared as the dataset service prepares an upload), or
        :class:`SimData`.
    peers
        Virtual peers, one shard each.
    label_column
        For a file: the label column (default: the last one).
    peers_per_round
        Overrides ``aggregation.peers_per_round``.
    volunteers
        Dropout, speeds, hostile peers (default: all honest, reliable and equal).
    workers
        Worker processes for training (0: in this process).
    threads
        torch's CPU threads for each training process: this one when ``workers`` is 0
        (default 1, restored afterwards), else each worker (default: the CPUs shared
        out). Small models train fastest on one thread (measured on the anchor task,
        2 cores: 1.0 s on one, 2.1 s on two); to use more cores, use ``workers``.
    device
        Training device (default: CUDA when present, as a peer picks).
    on_round
        Called with each round's metrics as soon as it is evaluated.
    init_weights
        Weights to start from (safetensors, or a ``.pt`` state dict, as ``job create
        --init-weights`` uploads them), checked to be the model's tensors; default:
        fresh weights from ``training.seed``.
    """
    job = parse_job_spec(spec)
    if peers_per_round is not None:
        block = {**job.aggregation.model_dump(), "peers_per_round": peers_per_round}
        job = job.model_copy(update={"aggregation": AggregationSpec.model_validate(block)})
    prepared = data if isinstance(data, SimData) else load_data(data, label_column=label_column)
    quiet_logs()
    pool = make_pool(workers, threads) if workers > 0 else None
    before = torch.get_num_threads()
    if pool is None:
        limit_threads(threads or 1)
    try:
        sim = Simulation(
            job,
            prepared,
            peers=peers,
            volunteers=volunteers,
            pool=pool,
            device=device,
            on_round=on_round,
            init_weights=init_weights.read_bytes()
            if isinstance(init_weights, Path)
            else init_weights,
        )
        return _run_loop(sim.run())
    finally:
        limit_threads(before)
        if pool is not None:
            pool.shutdown()


def _run_loop(main: Coroutine[Any, Any, SimResult]) -> SimResult:
    """``asyncio.run(main)`` without its SIGINT handler (Ctrl-C raises
    ``KeyboardInterrupt`` as in any Python code): installing that handler formats the
    repr of the main task, its coroutine's arguments and their tensors included, on
    each run (20 to 50 ms of a 1 s simulation)."""
    loop = asyncio.new_event_loop()
    loop.set_default_executor(_Inline())
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


class _Inline(ThreadPoolExecutor):
    """Runs what the services hand to a thread (``asyncio.to_thread``) at once, in the
    loop's own thread: one simulated job has nothing to overlap it with, and handing
    each of them to a thread and back cost more than many of them take."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:  # handed to the awaiting coroutine, as a thread would
            done.set_exception(exc)
        return done

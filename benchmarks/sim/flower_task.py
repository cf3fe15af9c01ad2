"""One bench-sim task on Flower 1.42's simulation engine (Ray); runs in the Flower venv.

::

    $FLOWER_VENV/bin/python benchmarks/sim/flower_task.py TASK_DIR

``TASK_DIR`` is written by ``benchmarks/sim/tasks.py`` (``task.json`` and
``data.npz``). This file imports only the standard library, flwr, torch, numpy and
psutil: it runs in the separate Flower environment (``deploy/local/flower-venv.sh``),
never in the project's.

A ServerApp runs Flower's ``FedAvg`` for the task's rounds, sampling exactly
``clients_per_round`` of the ``clients`` virtual clients each round (no federated
evaluation); a ClientApp trains the task's MLP with SGD on its own shard. Each Ray
actor gets 1 CPU and torch 1 thread. After the last round the ServerApp evaluates the
global model on the holdout.

Prints one JSON line last:

* ``wall_s``: around ``run_simulation`` (actor pool, rounds, final evaluation);
* ``ray_start_s``: ``ray.init`` before it (Ray is started here, so that Flower reuses
  it and its start is measured apart);
* ``accuracy``: the final global model on the holdout;
* ``peak_rss_mb``: the peak of the summed RSS of this process and all its descendants
  (Ray's GCS, raylet and workers), sampled every 0.2 s from before Ray starts to after
  the simulation (shared pages, e.g. Ray's object store, count once per process);
* ``rounds``: rounds run; ``clients``, ``clients_per_round``, ``ray_actors``, ``cpus``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg
from torch import nn

TASK_ENV = "BENCH_SIM_TASK_DIR"  # where the Ray workers find the task

# What the ServerApp found, read by main() (the ServerApp runs in a thread of this process).
RESULT: dict[str, Any] = {}
_data: dict[str, Any] = {}  # the task, loaded once per process (per Ray actor)


def load(task_dir: str | None = None) -> dict[str, Any]:
    """The task and its arrays as torch tensors, loaded once per process."""
    if not _data:
        path = Path(task_dir or os.environ[TASK_ENV])
        task = json.loads((path / "task.json").read_text())
        with np.load(path / "data.npz", allow_pickle=False) as f:
            arrays = {k: torch.from_numpy(f[k]) for k in f.files}
        _data.update(task=task, **arrays)
    return _data


def build_model(task: dict[str, Any]) -> nn.Module:
    """The task's MLP: flattened input -> hidden ReLU layers -> classes."""
    layers: list[nn.Module] = [nn.Flatten()]
    width = task["input_size"]
    for units in task["model"]["hidden"]:
        layers += [nn.Linear(width, units), nn.ReLU()]
        width = units
    layers.append(nn.Linear(width, task["num_classes"]))
    return nn.Sequential(*layers)


client_app = ClientApp()


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    """One client's local training on its shard, from the global model it was sent."""
    torch.set_num_threads(1)
    data = load()
    task = data["task"]
    params = task["training"]
    client = int(context.node_config["partition-id"])
    offsets = data["client_offsets"]
    rows = data["client_rows"][int(offsets[client]) : int(offsets[client + 1])]
    x, y = data["train_x"][rows], data["train_y"][rows]
    model = build_model(task)
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=params["lr"], momentum=params["momentum"])
    server_round = int(msg.content["config"]["server-round"])
    shuffle = torch.Generator().manual_seed(
        params["seed"] * 1_000_003 + server_round * 10_007 + client
    )
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(params["local_epochs"]):
        order = torch.randperm(len(y), generator=shuffle)
        for start in range(0, len(y), params["batch_size"]):
            batch = order[start : start + params["batch_size"]]
            optimizer.zero_grad()
            loss_fn(model(x[batch]), y[batch]).backward()
            optimizer.step()
    content = RecordDict(
        {
            "arrays": ArrayRecord(model.state_dict()),
            "metrics": MetricRecord({"num-examples": len(y)}),
        }
    )
    return Message(content=content, reply_to=msg)


server_app = ServerApp()


@server_app.main()
def server(grid: Grid, context: Context) -> None:
    """FedAvg over the task's rounds, then the global model on the holdout."""
    data = load()
    task = data["task"]
    seed = task["training"]["seed"]
    random.seed(seed)  # Flower's node sampling draws from `random`
    torch.manual_seed(seed)
    model = build_model(task)
    per_round, clients = task["clients_per_round"], task["clients"]
    strategy = FedAvg(
        fraction_train=per_round / clients,  # int(clients * fraction) == per_round
        fraction_evaluate=0.0,
        min_train_nodes=per_round,
        min_available_nodes=clients,
    )
    rounds_done = [0]

    def count_round(server_round: int, arrays: ArrayRecord) -> None:
        rounds_done[0] = server_round  # called after each round (and with 0 before)

    result = strategy.start(
        grid=grid,
        initial_arrays=ArrayRecord(model.state_dict()),
        num_rounds=task["rounds"],
        train_config=ConfigRecord({"lr": task["training"]["lr"]}),
        evaluate_fn=count_round,
    )
    model.load_state_dict(result.arrays.to_torch_state_dict())
    model.eval()
    with torch.no_grad():
        predicted = model(data["holdout_x"]).argmax(dim=1)
    RESULT["accuracy"] = float((predicted == data["holdout_y"]).float().mean())
    RESULT["rounds"] = rounds_done[0]


class PeakRss(threading.Thread):
    """Samples the summed RSS of this process and its descendants; keeps the peak."""

    def __init__(self, every_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.every_s = every_s
        self.peak = 0
        self._stop_event = threading.Event()

    def sample(self) -> int:
        me = psutil.Process()
        total = 0
        for proc in [me, *me.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):  # a worker that just exited
                total += proc.memory_info().rss
        return total

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.peak = max(self.peak, self.sample())
            self._stop_event.wait(self.every_s)

    def stop(self) -> float:
        """Stop sampling; the peak in MB."""
        self._stop_event.set()
        self.join()
        return round(self.peak / 2**20, 1)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    # This file imported as a module, not run as __main__: Ray's workers then import it
    # by name (the script's folder is on the PYTHONPATH Flower hands them) and keep one
    # loaded task per actor, and RESULT is the one its ServerApp writes.
    import flower_task
    import flwr
    import ray
    from flwr.simulation import run_simulation

    task_dir = str(Path(args[0]).resolve())
    os.environ[TASK_ENV] = task_dir
    os.environ["OMP_NUM_THREADS"] = "1"
    task = flower_task.load(task_dir)["task"]
    cpus = os.cpu_count() or 1
    sampler = PeakRss()
    sampler.start()
    started = time.perf_counter()
    pythonpath = os.pathsep.join([*sys.path, os.environ.get("PYTHONPATH", "")])
    ray.init(
        num_cpus=cpus,
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={
            "env_vars": {"PYTHONPATH": pythonpath, TASK_ENV: task_dir, "OMP_NUM_THREADS": "1"}
        },
    )
    ray_start_s = time.perf_counter() - started
    started = time.perf_counter()
    run_simulation(
        server_app=flower_task.server_app,
        client_app=flower_task.client_app,
        num_supernodes=task["clients"],
        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}},
    )
    wall_s = time.perf_counter() - started
    peak_rss_mb = sampler.stop()
    if ray.is_initialized():
        ray.shutdown()
    if "accuracy" not in flower_task.RESULT:
        print("the ServerApp did not finish (see Flower's log above)", file=sys.stderr)
        return 1
    result = {
        "task": task["name"],
        "wall_s": round(wall_s, 2),
        "ray_start_s": round(ray_start_s, 2),
        "accuracy": round(flower_task.RESULT["accuracy"], 4),
        "peak_rss_mb": peak_rss_mb,
        "rounds": flower_task.RESULT["rounds"],
        "clients": task["clients"],
        "clients_per_round": task["clients_per_round"],
        "ray_actors": cpus,  # 1 CPU each
        "cpus": cpus,
        "flwr": flwr.__version__,
        "ray": ray.__version__,
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The web console in real headless Chromium, against the real stack, through a real job.

A person's path: log in with the form, open the job from the jobs list, watch its accuracy
curve gain points round by round, download the model with the page's button; then the
compare, peers and dataset pages. The browser is Debian's ``chromium`` driven by the npm
package ``playwright-core`` (``web/console/test/browser.cjs``); the console is the build
the gateway serves (``make console``). Kept cheap: a 2,000-row table, 2 peers, 3 rounds
of a small MLP (3 local epochs, so that a round lasts long enough to be seen); then one
round of a residual MLP given as a layer graph of 170 nodes, whose architecture table must
stay usable. The screenshot of the job page is kept (the test prints its paths).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from training_support import Platform, create_job, dataset, finished, peers_active

from peertrain.common.testing import GATEWAY

pytestmark = [pytest.mark.stack]

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "web" / "console" / "test" / "browser.cjs"
ROUNDS = 3


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:  # deploy/local/install.sh installs it with the stack
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    return found


def _node_modules() -> str:
    """playwright-core from the console's cached `npm ci` (built here when missing)."""
    modules = os.environ.get("CONSOLE_NODE_MODULES", "")
    if not (modules and Path(modules, "playwright-core").is_dir()):
        subprocess.run(["bash", str(ROOT / "deploy/local/console.sh")], check=True, timeout=600)
    assert Path(modules, "playwright-core").is_dir(), modules
    return modules


def _table_csv(rows: int = 2000, seed: int = 3) -> bytes:
    """Three well separated classes in four numeric columns."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, rows)
    centres = np.array([[0, 0, 0, 0], [3, 3, 0, 0], [0, 3, 3, 3]], dtype=float)
    x = centres[labels] + rng.normal(0, 1.0, (rows, 4))
    out = io.StringIO()
    out.write("a,b,c,d,kind\n")
    for row, label in zip(x, labels, strict=True):
        out.write(",".join(f"{v:.4f}" for v in row) + f",{['red', 'green', 'blue'][label]}\n")
    return out.getvalue().encode()


def _job(dataset_id: str, peers: list[str]) -> dict[str, Any]:
    return {
        "name": "console-mlp",
        "dataset_id": dataset_id,
        "peers": peers,
        "model": {"arch": "mlp", "hidden": [16]},
        "training": {"rounds": ROUNDS, "local_epochs": 3, "batch_size": 8, "lr": 0.02, "seed": 5},
        "aggregation": {"strategy": "fedavg", "min_peers": 2, "round_deadline_s": 180},
    }


def _long_graph(blocks: int = 56) -> dict[str, Any]:
    """A residual MLP (tanh blocks: 56 ReLU ones diverge) on the table's 4 columns as a layer
    graph: 2 + 3 * ``blocks`` nodes."""
    width = 16

    def linear(name: str, source: str, n_in: int, n_out: int) -> dict[str, Any]:
        args = {"in_features": n_in, "out_features": n_out}
        return {"name": name, "op": "linear", "module": name, "inputs": [source], "args": args}

    nodes, last = [linear("stem", "x", 4, width)], "stem"
    for i in range(blocks):
        nodes += [
            linear(f"block{i}", last, width, width),
            {"name": f"act{i}", "op": "tanh", "inputs": [f"block{i}"]},
            {"name": f"res{i}", "op": "add", "inputs": [last, f"act{i}"]},
        ]
        last = f"res{i}"
    nodes.append(linear("head", last, width, 3))
    return {"arch": "graph", "input_shape": [4], "nodes": nodes, "output": "head"}


async def test_console_shows_a_real_jobs_curve_growing_and_downloads_its_model(
    platform: Platform, tmp_path: Path
) -> None:
    chromium, modules = _chromium(), _node_modules()
    dataset_id = await dataset(
        platform, "console-table", "table.csv", _table_csv(), label_column="kind"
    )
    peers = [platform.peer(f"p{i}").peer_id for i in range(2)]
    await peers_active(platform, peers)

    env = {
        **os.environ,
        "GATEWAY": GATEWAY,
        "CONSOLE_USER": platform.username,
        "CONSOLE_PASSWORD": platform.password,
        "ROUNDS": str(ROUNDS),
        "OUT_DIR": str(tmp_path),
        "CHROMIUM": chromium,
        "CONSOLE_NODE_MODULES": modules,
    }
    browser = subprocess.Popen(
        ["node", str(SCRIPT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "browser.err").open("w"),
        text=True,
        env=env,
    )
    assert browser.stdin is not None and browser.stdout is not None
    try:
        ready = browser.stdout.readline()
        assert json.loads(ready or "{}").get("ready"), (tmp_path / "browser.err").read_text()
        # The job starts only once the browser is logged in: it sees every round arrive.
        job_id = await create_job(platform, _job(dataset_id, peers))
        browser.stdin.write(json.dumps({"job_id": job_id, "dataset_id": dataset_id}) + "\n")
        browser.stdin.flush()
        want = json.loads(browser.stdout.readline() or "{}")
        assert want.get("want_graph"), (tmp_path / "browser.err").read_text()[-4000:]
        graph_job = {
            **_job(dataset_id, peers),
            "name": "console-graph",
            "model": _long_graph(),
            "training": {"rounds": 1, "local_epochs": 1, "batch_size": 32, "seed": 5},
        }
        graph_id = await create_job(platform, graph_job)
        browser.stdin.write(json.dumps({"job_id": graph_id}) + "\n")
        browser.stdin.flush()
        out = browser.stdout.read()
        rc = browser.wait(timeout=900)
    finally:
        if browser.poll() is None:
            browser.kill()
            browser.wait()
    assert rc == 0, (tmp_path / "browser.err").read_text()[-4000:]
    result = json.loads(out.strip().splitlines()[-1])

    stable = Path(os.environ.get("VAR_DIR") or ROOT / ".var") / "console-screenshot.png"
    stable.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result["screenshot"], stable)
    print(
        json.dumps(
            {
                "job": job_id,
                "seen": result["seen"],
                "screenshot": str(stable),
                "test_screenshot": result["screenshot"],
            }
        )
    )

    job = await finished(platform, job_id)
    assert job["state"] == "completed", job
    seen = result["seen"]
    # Round by round: the curve grew while the page was open, one round's point at a time
    # or more, never losing one, up to every round.
    assert seen == sorted(seen) and seen[-1] == ROUNDS, seen
    assert len({n for n in seen if n > 0}) >= 2, seen
    assert result["download_head"] == "PK" and result["download_bytes"] > 1000, result
    assert result["compare_points"] == ROUNDS
    assert all(p[-8:] in result["job_peers_text"] for p in peers), result["job_peers_text"]
    assert result["config_chars"] > 0
    assert len(result["peer_rows"]) >= 2
    assert result["class_rows"] == 3 and result["schema_rows"] == 5, result
    assert result["page_errors"] == [], result["page_errors"]
    # The MLP's architecture: two linear layers around a ReLU, open at once.
    arch = result["architecture"]
    assert (arch["parameters"], arch["rows"], arch["open"]) == (4 * 16 + 16 + 16 * 3 + 3, 3, True)
    assert "131 parameters" in arch["text"], arch
    # The long graph: every node a row, closed at first, scrolling in its own box.
    graph = result["graph"]
    assert graph["rows"] == 2 + 3 * 56 and graph["closed_at_first"] and graph["open"], graph
    assert graph["parameters"] == 4 * 16 + 16 + 56 * (16 * 16 + 16) + 16 * 3 + 3, graph
    assert graph["box_scrolls"] and graph["page_width"] <= graph["window_width"], graph
    assert (await finished(platform, graph_id))["state"] == "completed"

"""The web console in real headless Chromium, against the real stack, through a real job.

A person's path: log in with the form, see the job arrive on the open jobs list and change
state there, open it, watch its accuracy curve gain points round by round (accuracy axis 0
to 1, loss from 0), reload (still logged in), download the model with the page's button,
rerun it under the same name and cancel the rerun, read the rerun's events, compare the
two (the legend tells them apart by their ids' ends), have the server check a new job as
the form is filled in, upload a 31-column table through the upload page (the page stays
as wide as the window); then the peers and dataset pages. The browser is Debian's
``chromium`` driven by the npm package ``playwright-core`` (``web/console/test/browser.cjs``);
the console is the build the gateway serves (``make console``). Kept cheap: a 2,000-row
table, 2 peers, 3 rounds
of a small MLP (3 local epochs, so that a round lasts long enough to be seen); then one
round of a residual MLP given as a layer graph of 170 nodes, whose architecture table must
stay usable. The screenshots are kept (the job page's as ``console-screenshot.png``; the
test prints every path).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from training_support import Platform, create_job, dataset, finished, peers_active

from peertrain.testkit.common import GATEWAY

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


def _wide_csv(rows: int = 300, columns: int = 30, seed: int = 4) -> bytes:
    """``columns`` numeric columns and a label: a preview far wider than the window."""
    rng = np.random.default_rng(seed)
    out = io.StringIO()
    out.write(",".join(f"measurement_{i:02d}" for i in range(columns)) + ",label\n")
    for row in rng.normal(0, 1000, (rows, columns)):
        out.write(",".join(f"{v:.6f}" for v in row) + f",{'yes' if row[0] > 0 else 'no'}\n")
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
    # One peer waits 14 times its compute after each task (about a second): every round
    # lasts long enough for the page, opened a few steps after the job starts, to see
    # the curve grow (rounds of a few hundred milliseconds ended before it was open).
    paced = platform.peer("console-paced", env={"PEERTRAIN_PEER_SLOWDOWN": "15"})
    peers = [platform.peer("p0").peer_id, paced.peer_id]
    await peers_active(platform, peers)
    wide_csv = tmp_path / "wide.csv"
    wide_csv.write_bytes(_wide_csv())

    env = {
        **os.environ,
        "GATEWAY": GATEWAY,
        "CONSOLE_USER": platform.username,
        "CONSOLE_PASSWORD": platform.password,
        "ROUNDS": str(ROUNDS),
        "OUT_DIR": str(tmp_path),
        "CHROMIUM": chromium,
        "WIDE_CSV": str(wide_csv),
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
        rerun = await finished(platform, want["rerun_id"])
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
                "test_screenshots": result["screenshots"],
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
    # the best version: a file named after its version, its sha256 checked in the page
    assert re.fullmatch(r".+-v\d+\.pt", result["best_name"]) and result["best_bytes"] > 1000, result
    assert "sha256 checked" in result["best_status"], result
    # The jobs list showed the job arrive and change, without a reload.
    assert len(result["list_states"]) >= 2, result["list_states"]
    assert result["hidden_paused"], result  # a hidden tab waits, a shown one polls again
    assert result["reload_kept_session"], result
    # Axes: accuracy 0 to 1, loss from 0 (to a nice tick); each peer's training curve.
    axes = result["axes"]
    assert (axes["curve-accuracy"]["y0"], axes["curve-accuracy"]["y1"]) == (0, 1), axes
    assert axes["curve-loss"]["y0"] == 0 and axes["curve-loss"]["y1"] > 0, axes
    assert axes["peer-loss"]["points"] == ROUNDS * 3, axes  # every local epoch of a peer
    assert dataset_id in result["lineage"] and "v3" in result["lineage"], result["lineage"]
    # The rerun: the same spec and name, cancelled from its page; its events say so.
    assert rerun["state"] == "cancelled" and rerun["name"] == "console-mlp", rerun
    assert rerun["model"] == job["model"] and rerun["peers"] == job["peers"], rerun
    assert result["cancel_disabled"]
    assert "job.created" in result["event_types"], result["event_types"]
    assert "job.cancelled" in result["event_types"], result["event_types"]
    # Two jobs of one name: each legend entry ends with the shortest distinct end of its id.
    legend = result["legend"]
    assert len(set(legend)) == 2 and all(e.startswith("console-mlp …") for e in legend), legend
    for entry, jid in zip(legend, [job_id, result["rerun_id"]], strict=True):
        assert jid.endswith(entry.rpartition("…")[2]), (entry, jid)
    assert result["compare_axes"]["accuracy"] == [0, 1], result["compare_axes"]
    assert result["compare_axes"]["loss"][0] == 0, result["compare_axes"]
    assert result["dry_run"].startswith("valid: it would run on 2 peer"), result["dry_run"]
    # The 31-column table: its preview scrolls in its box, the page does not.
    wide = result["wide"]
    assert wide["columns"] == 31 and wide["box_scrolls"], wide
    assert wide["page_width"] <= wide["window_width"], wide
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

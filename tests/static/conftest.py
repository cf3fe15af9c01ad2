"""The deployment tools the static tests run: helm and deploy/check's checkers (built
with Go), and hadolint.

They are installed once per machine (`bash deploy/local/install.sh tools`: helm and
hadolint at the versions pinned in deploy/local/env.sh, the checkers keyed on their
sources) into PEERTRAIN_CACHE, outside the clone; `make test` installs them while it
installs the stack.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class GoTools:
    """Paths of the built tools."""

    helm: Path
    compose_check: Path
    k8s_check: Path


@pytest.fixture(scope="session")
def go_tools() -> GoTools:
    """Build what is missing (a no-op once cached) and say where the tools are."""
    done = subprocess.run(
        [
            "bash",
            "-c",
            ". deploy/local/env.sh && bash deploy/local/install.sh tools >&2"
            ' && echo "$HELM_BIN" && echo "$CHECKERS_DIR"',
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    helm, checkers = done.stdout.split()
    return GoTools(
        helm=Path(helm),
        compose_check=Path(checkers) / "compose-check",
        k8s_check=Path(checkers) / "k8s-check",
    )


@pytest.fixture(scope="session")
def hadolint() -> Path:
    """hadolint, installed when missing (a no-op once cached)."""
    done = subprocess.run(
        [
            "bash",
            "-c",
            ". deploy/local/env.sh && bash deploy/local/install.sh tools >&2"
            ' && echo "$HADOLINT_BIN"',
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip())


_SET_POLICY = re.compile(
    r"rabbitmqctl -q set_policy --apply-to queues --priority (\d+)\s+(\S+)\s+'([^']*)'\s+'([^']*)'"
)


def set_policies(script: str) -> dict[str, dict[str, object]]:
    """The queue policies a shell script sets with ``rabbitmqctl set_policy``, in the
    shape of :data:`peertrain.common.bus.topology.QUEUE_POLICIES`."""
    return {
        name: {"pattern": pattern, "priority": int(priority), "definition": json.loads(body)}
        for priority, name, pattern, body in _SET_POLICY.findall(script)
    }

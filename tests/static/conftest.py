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


def _tools(*variables: str) -> list[str]:
    """Install what is missing (a no-op once cached); the values of env.sh's
    ``variables`` that say where the tools are."""
    echo = " && ".join(f'echo "${v}"' for v in variables)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f". deploy/local/env.sh && bash deploy/local/install.sh tools >&2 && {echo}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


@pytest.fixture(scope="session")
def go_tools() -> GoTools:
    """Build what is missing and say where the tools are."""
    helm, checkers = _tools("HELM_BIN", "CHECKERS_DIR")
    return GoTools(
        helm=Path(helm),
        compose_check=Path(checkers) / "compose-check",
        k8s_check=Path(checkers) / "k8s-check",
    )


@pytest.fixture(scope="session")
def hadolint() -> Path:
    """hadolint, installed when missing."""
    (path,) = _tools("HADOLINT_BIN")
    return Path(path)


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

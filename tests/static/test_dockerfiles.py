"""Static checks of every image's Dockerfile in deploy/docker/ (no Docker engine needed).

hadolint (installed by `bash deploy/local/install.sh tools`) lints each file with its
strictest threshold; the rules below say what this project promises of its images,
whatever hadolint's defaults are: a numeric non-root user, base images pinned by a
version tag, nothing fetched by ``ADD``, lean apt installs, and a final stage with
neither package installers nor compilers.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "deploy" / "docker"
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))
NAMES = [path.name for path in DOCKERFILES]
BUILD_TOOLS = re.compile(
    r"\b(pip3? install|uv (?:pip|sync|venv|tool)|npm (?:ci|install)|apt-get install"
    r"|apk add|gcc|g\+\+|make|build-essential|cargo|go build)\b"
)


def instructions(text: str) -> list[str]:
    """The file's instructions, continuation lines joined, comments dropped."""
    out: list[str] = []
    current = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        out.append(current + line.strip())
        current = ""
    return out


def stages(text: str) -> list[list[str]]:
    """The instructions of each stage (``FROM`` first); global ``ARG``s are left out."""
    out: list[list[str]] = []
    for ins in instructions(text):
        if ins.upper().startswith("FROM "):
            out.append([ins])
        elif out:
            out[-1].append(ins)
    return out


def global_args(text: str) -> dict[str, str]:
    """``ARG NAME=default`` before the first ``FROM``."""
    args: dict[str, str] = {}
    for ins in instructions(text):
        if ins.upper().startswith("FROM "):
            break
        match = re.match(r"ARG\s+(\w+)=(\S+)", ins)
        if match:
            args[match.group(1)] = match.group(2)
    return args


def test_every_image_is_checked() -> None:
    assert set(NAMES) >= {
        f"{name}.Dockerfile"
        for name in (
            "auth",
            "registry",
            "dataset",
            "orchestrator",
            "aggregator",
            "gateway",
            "peer",
        )
    }


@pytest.mark.parametrize("name", NAMES)
def test_base_images_are_pinned_by_a_version_tag(name: str) -> None:
    text = (DOCKER / name).read_text()
    args = global_args(text)
    stage_names: set[str] = set()
    for stage in stages(text):
        match = re.match(r"FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", stage[0], re.I)
        assert match, stage[0]
        image = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), match[1])
        if image not in stage_names:
            assert "$" not in image, f"{name}: {match[1]} has no default"
            assert ":" in image or "@sha256:" in image, f"{name}: {image} has no tag"
            tag = image.rsplit("@", 1)[0].rsplit(":", 1)[-1]
            assert tag != "latest" and re.search(r"\d", tag), f"{name}: {image} floats"
        if match[2]:
            stage_names.add(match[2])


@pytest.mark.parametrize("name", NAMES)
def test_the_final_stage_runs_as_a_numeric_non_root_user(name: str) -> None:
    final = stages((DOCKER / name).read_text())[-1]
    users = [ins.split()[1] for ins in final if ins.upper().startswith("USER ")]
    assert users, f"{name}: the final stage runs as root"
    assert re.fullmatch(r"\d+(:\d+)?", users[-1]), f"{name}: USER {users[-1]} is not numeric"
    assert int(users[-1].split(":")[0]) != 0, f"{name}: USER {users[-1]} is root"


@pytest.mark.parametrize("name", NAMES)
def test_the_final_stage_has_a_healthcheck_and_no_build_tools(name: str) -> None:
    final = stages((DOCKER / name).read_text())[-1]
    assert any(re.match(r"HEALTHCHECK\s+(?!NONE)", ins) for ins in final), name
    for ins in final:
        if ins.upper().startswith("RUN "):
            assert not BUILD_TOOLS.search(ins), f"{name}: the final stage runs {ins!r}"


@pytest.mark.parametrize("name", NAMES)
def test_nothing_is_fetched_by_add_and_apt_installs_are_lean(name: str) -> None:
    for ins in instructions((DOCKER / name).read_text()):
        assert not ins.upper().startswith("ADD "), f"{name}: use COPY, not {ins!r}"
        if "apt-get install" in ins:
            assert "--no-install-recommends" in ins, f"{name}: {ins!r}"
            assert "rm -rf /var/lib/apt/lists" in ins, f"{name}: apt lists left in {ins!r}"
        # (uv's cache stays in the build stage, which no image keeps)
        for tool in re.findall(r"(?<!uv )\bpip3? install [^&;]*", ins):
            assert "--no-cache-dir" in tool, f"{name}: pip keeps its cache: {ins!r}"
            packages = [w for w in tool.split()[2:] if not w.startswith("-")]
            assert all("==" in p for p in packages), f"{name}: unpinned {tool!r}"


@pytest.mark.parametrize("name", NAMES)
def test_hadolint_finds_nothing(hadolint: Path, name: str) -> None:
    done = subprocess.run(
        [str(hadolint), "--no-color", "--failure-threshold", "info", str(DOCKER / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

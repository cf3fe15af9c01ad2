"""The Prometheus alert rules (deploy/prometheus/alerts.yml), checked without a stack.

promtool (Debian's prometheus package, which deploy/local/install.sh installs for the
local stack) checks the rules and both Prometheus configs that load them, and runs the
rules' unit tests (deploy/prometheus/alerts.test.yml). Every metric the rules use is one
the platform exports.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS / "alerts.yml"

# What RabbitMQ's rabbitmq_prometheus plugin exports that the rules use (its alarm
# gauges, and the detailed endpoint's queue depth that the Grafana dashboards use too).
RABBITMQ_METRICS = {
    "rabbitmq_alarms_memory_used_watermark",
    "rabbitmq_alarms_free_disk_space_watermark",
    "rabbitmq_alarms_file_descriptor_limit",
    "rabbitmq_detailed_queue_messages",
}
_METRIC_CTOR = re.compile(r"(?:Counter|Gauge|Histogram|Summary)\(\s*\"([a-z_:]+)\"")
_NAME = re.compile(r"\b((?:peertrain|rabbitmq)_[a-z_]+)\b")


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool not found: Debian's prometheus package has it (deploy/local/install.sh)"
    return found


def run(promtool: str, *args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_promtool_accepts_the_rules(promtool: str) -> None:
    found = f"SUCCESS: {len(alert_names())} rules found"
    assert found in run(promtool, "check", "rules", str(RULES))


def test_each_alert_fires_on_what_it_watches_and_only_then(promtool: str) -> None:
    """alerts.test.yml: every alert firing, and quiet on a healthy platform."""
    tested = yaml.safe_load((PROMETHEUS / "alerts.test.yml").read_text())
    names = {
        case["alertname"] for test in tested["tests"] for case in test.get("alert_rule_test", [])
    }
    assert names == alert_names()
    assert "SUCCESS" in run(promtool, "test", "rules", "alerts.test.yml", cwd=PROMETHEUS)


@pytest.mark.parametrize("config", ["prometheus.yml", "prometheus.compose.yml"])
def test_the_local_and_compose_prometheus_load_the_rules(promtool: str, config: str) -> None:
    text = (PROMETHEUS / config).read_text()
    assert yaml.safe_load(text)["rule_files"] == ["alerts.yml"]
    # relative to the config: the rendered local config and compose's mount sit beside it
    assert "SUCCESS: 1 rule files found" in run(
        promtool, "check", "config", str(PROMETHEUS / config)
    )


def test_the_rules_travel_with_each_config() -> None:
    local = (ROOT / "deploy" / "local" / "prometheus.sh").read_text()
    assert 'cp "$ROOT/deploy/prometheus/alerts.yml" "$PROM_DIR/alerts.yml"' in local
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    volumes = compose["services"]["prometheus"]["volumes"]
    assert "./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in volumes
    assert "./deploy/prometheus/prometheus.compose.yml:/etc/prometheus/prometheus.yml:ro" in volumes


def alert_names() -> set[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"] for group in groups for rule in group["rules"]}


def exported() -> set[str]:
    """Every metric name the platform's code registers with prometheus_client."""
    names: set[str] = set()
    for top in ("libs", "services", "peer-runtime"):
        for path in (ROOT / top).rglob("*.py"):
            names.update(_METRIC_CTOR.findall(path.read_text()))
    return names


def test_every_metric_the_rules_use_is_exported() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    used = {name for g in groups for rule in g["rules"] for name in _NAME.findall(rule["expr"])}
    ours = {n for n in used if n.startswith("peertrain_")}
    assert ours, used
    assert ours <= exported(), ours - exported()
    assert used - ours <= RABBITMQ_METRICS, used - ours - RABBITMQ_METRICS
    # the five: job stuck, dead letters, refused peer messages, broker alarm,
    # store down
    assert {
        "PeerTrainJobStuck",
        "PeerTrainDeadLettersGrowing",
        "PeerTrainPeerMessagesRefused",
        "PeerTrainBrokerAlarm",
        "PeerTrainStoreDown",
    } <= alert_names()

"""The Helm chart, checked without a cluster (deploy/helm/check.sh, `make check-helm`).

helm lint --strict, helm template with the default and the production values, and every
rendered object decoded strictly into the k8s.io/api types by deploy/check/k8s, which
also checks what the chart promises. The other tests show that the checker refuses what
it should: strict decoding errors, and each rule broken once in an otherwise good
rendering.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from peertrain.common.bus.topology import QUEUE_POLICIES

from .conftest import GoTools, set_policies

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "peertrain"
# helm built by `go install` assumes Kubernetes 1.20; the chart needs 1.27 or later.
VERSION = ("--kube-version", "1.33.0")


def test_make_check_helm_passes() -> None:
    done = subprocess.run(
        ["bash", "deploy/helm/check.sh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("k8s-check: ok: ") == 2, done.stdout
    assert done.stdout.count("0 chart(s) failed") == 2, done.stdout


def render(tools: GoTools, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(tools.helm), "template", "peertrain", str(CHART), "-n", "peertrain", *VERSION, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def k8s_check(tools: GoTools, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools.k8s_check), "-"], input=text, capture_output=True, text=True, timeout=60
    )


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def test_the_chart_renders_what_the_issue_asks_for(go_tools: GoTools) -> None:
    docs = render(go_tools)
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for name in ("auth", "registry", "dataset", "orchestrator", "aggregator", "gateway"):
        assert ("Deployment", f"peertrain-{name}") in kinds
        assert ("PodDisruptionBudget", f"peertrain-{name}") in kinds
    assert ("Ingress", "peertrain-gateway") in kinds
    assert not [d for d in docs if d["kind"] == "Secret"], "the chart must not create Secrets"
    replicas = {
        d["metadata"]["name"]: d["spec"]["replicas"] for d in docs if d["kind"] == "StatefulSet"
    }
    assert replicas == {
        "peertrain-rabbitmq": 3,
        "peertrain-mongodb": 3,
        "peertrain-minio": 4,
        "peertrain-peer": 0,
    }
    peer = find(docs, "StatefulSet", "peertrain-peer")
    assert [c["metadata"]["name"] for c in peer["spec"]["volumeClaimTemplates"]] == ["identity"]
    dashboards = [
        d for d in docs if d["kind"] == "ConfigMap" and "dashboard" in d["metadata"]["name"]
    ]
    shipped = sorted(p.name for p in (ROOT / "deploy" / "grafana" / "dashboards").glob("*.json"))
    assert sorted(k for d in dashboards for k in d["data"]) == shipped
    for d in dashboards:
        [(file, text)] = d["data"].items()
        assert text == (ROOT / "deploy" / "grafana" / "dashboards" / file).read_text()


def test_the_replica_counts_follow_the_values(go_tools: GoTools) -> None:
    docs = render(go_tools, "--set", "services.auth.replicas=3", "--set", "peers.replicas=5")
    assert find(docs, "Deployment", "peertrain-auth")["spec"]["replicas"] == 3
    assert find(docs, "StatefulSet", "peertrain-peer")["spec"]["replicas"] == 5


def env_of(doc: dict[str, Any]) -> dict[str, Any]:
    [container] = doc["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_auth_believes_forwarded_addresses_from_the_proxies_in_front_of_it(
    go_tools: GoTools,
) -> None:
    """The ingress controller and the gateway (pod addresses): throttling keys on clients."""
    auth = env_of(find(render(go_tools), "Deployment", "peertrain-auth"))
    trusted = auth["PEERTRAIN_AUTH_TRUSTED_PROXIES"].split(",")
    assert trusted == ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fd00::/8"]
    narrowed = render(go_tools, "--set", "services.auth.trustedProxies={10.244.0.0/16}")
    auth = env_of(find(narrowed, "Deployment", "peertrain-auth"))
    assert auth["PEERTRAIN_AUTH_TRUSTED_PROXIES"] == "10.244.0.0/16"
    # the gateway, which auth hears from, takes the client's address from the ingress
    # controller (realip) and hands it on in X-Real-IP
    conf = find(narrowed, "ConfigMap", "peertrain-gateway")["data"]
    assert "proxy_set_header X-Real-IP         $remote_addr;" in conf["default.conf"]
    realip = [ln for ln in conf["realip.conf"].splitlines() if not ln.startswith("#")]
    assert realip == [
        "set_real_ip_from 10.0.0.0/8;",
        "set_real_ip_from 172.16.0.0/12;",
        "set_real_ip_from 192.168.0.0/16;",
        "set_real_ip_from fd00::/8;",
        "real_ip_header X-Forwarded-For;",
        "real_ip_recursive on;",
    ]
    ingress = render(go_tools, "--set", "gateway.trustedProxies={10.244.0.0/16}")
    realip = find(ingress, "ConfigMap", "peertrain-gateway")["data"]["realip.conf"]
    assert "set_real_ip_from 10.244.0.0/16;" in realip and "192.168" not in realip


def test_the_gateway_runs_nginx_unprivileged(go_tools: GoTools) -> None:
    gateway = find(render(go_tools), "Deployment", "peertrain-gateway")["spec"]["template"]
    [nginx] = gateway["spec"]["containers"]
    assert nginx["image"].startswith("nginxinc/nginx-unprivileged:")
    assert gateway["spec"]["securityContext"]["runAsNonRoot"] is True
    assert [p["containerPort"] for p in nginx["ports"]] == [8080]


BAD_DECODING = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: typo}
spec:
  replicas: 1
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: x
          image: x:1.0.0
          imagePullPolicyy: Always
---
apiVersion: v1
kind: Service
metadata: {name: wrong-type}
spec:
  ports: [{port: eighty}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: twice}
data: {a: "1"}
data: {b: "2"}
---
apiVersion: example.com/v1
kind: Unknown
metadata: {name: stranger}
"""


def test_k8s_check_decodes_strictly(go_tools: GoTools) -> None:
    done = k8s_check(go_tools, BAD_DECODING)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4, lines
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolicyy"' in lines[0]
    assert "document 2" in lines[1] and "port" in lines[1]
    assert "document 3" in lines[2] and 'key "data" already set' in lines[2]
    assert "document 4" in lines[3] and "Unknown" in lines[3]


def mutate(docs: list[dict[str, Any]]) -> None:
    """Break each rule once in an otherwise good rendering."""
    find(docs, "Service", "peertrain-gateway")["spec"]["type"] = "LoadBalancer"
    auth = find(docs, "Deployment", "peertrain-auth")["spec"]["template"]["spec"]
    auth["containers"][0]["readinessProbe"]["httpGet"]["path"] = "/healthz"
    auth["containers"][0]["env"].append(
        {"name": "PEERTRAIN_AUTH_ADMIN_PASSWORD", "value": "hunter2"}
    )
    dataset = find(docs, "Deployment", "peertrain-dataset")["spec"]["template"]["spec"]
    dataset["securityContext"]["runAsNonRoot"] = False
    del dataset["containers"][0]["resources"]["limits"]
    gateway = find(docs, "Deployment", "peertrain-gateway")["spec"]["template"]["spec"]
    gateway["containers"][0]["image"] = "nginx:latest"
    docs.remove(find(docs, "PodDisruptionBudget", "peertrain-registry"))
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "defaults"},
            "stringData": {"rabbitmq-password": "admin"},
        }
    )


def test_k8s_check_names_each_broken_promise(go_tools: GoTools) -> None:
    docs = render(go_tools)
    assert k8s_check(go_tools, yaml.safe_dump_all(docs)).returncode == 0
    mutate(docs)
    done = k8s_check(go_tools, yaml.safe_dump_all(docs))
    assert done.returncode == 1, done.stdout + done.stderr
    assert sorted(done.stdout.splitlines()) == [
        "Deployment/peertrain-auth, container auth: PEERTRAIN_AUTH_ADMIN_PASSWORD is not from "
        "a Secret: it is written in the file",
        'Deployment/peertrain-auth, container auth: readiness probe on "/healthz", not /readyz',
        "Deployment/peertrain-dataset, container dataset: may run as root (set runAsNonRoot)",
        "Deployment/peertrain-dataset, container dataset: needs CPU and memory requests and "
        "a memory limit",
        'Deployment/peertrain-gateway, container nginx: image "nginx:latest" floats: '
        "the tag latest",
        "Deployment/peertrain-registry: no PodDisruptionBudget selects its pods",
        'Secret/defaults: rabbitmq-password is the development default "admin"',
        "Service/peertrain-gateway: type LoadBalancer opens it outside the cluster (use the "
        "Ingress)",
    ]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("existingSecret=", "existingSecret"),
        ("ingress.host=", "ingress.host"),
        ("services.auth.trustedProxies=null", "services.auth.trustedProxies"),
        ("gateway.trustedProxies=null", "gateway.trustedProxies"),
    ],
)
def test_the_chart_refuses_to_render_without_what_it_cannot_default(
    go_tools: GoTools, setting: str, message: str
) -> None:
    done = subprocess.run(
        [str(go_tools.helm), "template", "peertrain", str(CHART), "--set", setting, *VERSION],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert message in done.stderr


def test_the_broker_bounds_every_queue_as_the_platform_expects(go_tools: GoTools) -> None:
    rabbitmq = find(render(go_tools), "StatefulSet", "peertrain-rabbitmq")
    [container] = rabbitmq["spec"]["template"]["spec"]["containers"]
    [shell, flag, script] = container["readinessProbe"]["exec"]["command"]
    assert (shell, flag) == ("sh", "-c")
    assert set_policies(script) == QUEUE_POLICIES
    assert script.rstrip().endswith("rabbitmq-diagnostics -q check_port_connectivity")

"""The Helm chart, checked without a cluster (deploy/helm/check.sh, `make check-helm`).

helm lint --strict, helm template with the default and the production values, and every
rendered object decoded strictly into the k8s.io/api types by deploy/check/k8s, which
also checks what the chart promises. The other tests show that the checker refuses what
it should: strict decoding errors, and each rule broken once in an otherwise good
rendering.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema_rs
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


def test_the_gateway_runs_the_image_with_the_console(go_tools: GoTools) -> None:
    """deploy/docker/gateway.Dockerfile's image (nginx-unprivileged plus the console's
    build), as compose runs it, at the release's tag: the console answers at /."""
    gateway = find(render(go_tools), "Deployment", "peertrain-gateway")["spec"]["template"]
    [nginx] = gateway["spec"]["containers"]
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert nginx["image"] == f"peertrain/gateway:{app_version}"
    assert gateway["spec"]["securityContext"]["runAsNonRoot"] is True
    assert [p["containerPort"] for p in nginx["ports"]] == [8080]
    conf = find(render(go_tools), "ConfigMap", "peertrain-gateway")["data"]["default.conf"]
    assert "root /usr/share/nginx/console;" in conf
    dockerfile = (ROOT / "deploy" / "docker" / "gateway.Dockerfile").read_text()
    assert "COPY --from=build /console /usr/share/nginx/console" in dockerfile
    for args, image in [
        (("--set", "image.tag=1.2.3"), "peertrain/gateway:1.2.3"),
        (("--set", "gateway.image.tag=1.2.4", "--set", "image.registry=r.example"), None),
    ]:
        [nginx] = find(render(go_tools, *args), "Deployment", "peertrain-gateway")["spec"][
            "template"
        ]["spec"]["containers"]
        assert nginx["image"] == (image or "r.example/peertrain/gateway:1.2.4")


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


def pod_owners(docs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Every object that runs pods: its component and its pods' labels."""
    return {
        d["metadata"]["labels"]["app.kubernetes.io/component"]: d["spec"]["template"]["metadata"][
            "labels"
        ]
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet", "Job")
    }


def policies(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """NetworkPolicy specs by the component their podSelector picks."""
    found = {}
    for d in docs:
        if d["kind"] == "NetworkPolicy":
            labels = d["spec"]["podSelector"]["matchLabels"]
            found[labels["app.kubernetes.io/component"]] = d["spec"]
    return found


def admitted(spec: dict[str, Any], port: int) -> list[str] | None:
    """Components a policy admits on ``port`` (``None``: any source; "external" for a
    namespace or address block)."""
    sources: list[str] = []
    for rule in spec.get("ingress", []):
        if port not in [p["port"] for p in rule.get("ports", [])]:
            continue
        if "from" not in rule:
            return None
        for peer in rule["from"]:
            if "podSelector" in peer and "namespaceSelector" not in peer:
                sources.append(peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"])
            else:
                sources.append("external")
    return sorted(sources)


def reached(spec: dict[str, Any]) -> dict[int, list[str]]:
    """Ports a policy's egress allows, each with the components it may reach there."""
    out: dict[int, list[str]] = {}
    for rule in spec.get("egress", []):
        for port in rule["ports"]:
            out.setdefault(port["port"], []).extend(
                peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
                if "podSelector" in peer
                else "external"
                for peer in rule.get("to", [])
            )
    return {p: sorted(set(c)) for p, c in out.items()}


SERVICES = ["aggregator", "auth", "dataset", "orchestrator", "registry"]


def test_every_pod_of_the_release_has_a_network_policy(go_tools: GoTools) -> None:
    for args in [(), ("-f", str(ROOT / "deploy" / "helm" / "values-production.yaml"))]:
        docs = render(go_tools, *args)
        owners = pod_owners(docs)
        found = policies(docs)
        assert set(owners) == set(found), set(owners) ^ set(found)
        for component, labels in owners.items():
            selector = next(
                d["spec"]["podSelector"]["matchLabels"]
                for d in docs
                if d["kind"] == "NetworkPolicy"
                and d["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
                == component
            )
            assert selector.items() <= labels.items(), component
            assert "Ingress" in found[component]["policyTypes"]
    assert not policies(render(go_tools, "--set", "networkPolicy.enabled=false"))


def test_from_outside_only_the_gateway_and_the_peers_doors_are_open(go_tools: GoTools) -> None:
    found = policies(render(go_tools))
    # From anywhere by default: the gateway (the ingress controller), and the peers'
    # doors, AMQP and S3 (presigned URLs).
    assert admitted(found["gateway"], 8080) is None
    assert admitted(found["rabbitmq"], 5672) is None
    assert admitted(found["minio"], 9000) is None
    # Everything else: the release's own pods, and Prometheus on the metrics ports.
    for service in SERVICES:
        assert admitted(found[service], 8000) == ["external", "gateway"]
    assert admitted(found["rabbitmq"], 15672) == ["rabbitmq", "registry"]
    assert admitted(found["rabbitmq"], 25672) == ["rabbitmq"]
    assert admitted(found["rabbitmq"], 15692) == ["external", "rabbitmq"]
    assert admitted(found["mongodb"], 27017) == sorted([*SERVICES, "mongodb", "mongodb-init"])
    assert admitted(found["minio"], 9001) == []
    for closed in ("peer", "mongodb-init", "minio-bucket"):
        assert found[closed].get("ingress", []) == [], closed
    # Prometheus's namespace is the one named in the values.
    [prometheus] = [
        peer
        for rule in found["auth"]["ingress"]
        for peer in rule["from"]
        if "namespaceSelector" in peer
    ]
    assert prometheus["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }


def test_the_peers_doors_can_be_narrowed_to_the_peers_addresses(go_tools: GoTools) -> None:
    found = policies(
        render(
            go_tools,
            "--set", "networkPolicy.peerDoorsFrom[0].ipBlock.cidr=198.51.100.0/24",
            "--set", "networkPolicy.gatewayFrom[0].namespaceSelector.matchLabels.name=ingress",
        )
    )  # fmt: skip
    assert admitted(found["rabbitmq"], 5672) == sorted([*SERVICES, "external", "peer"])
    assert admitted(found["minio"], 9000) == sorted(
        ["aggregator", "dataset", "orchestrator", "external", "external", "minio", "minio-bucket",
         "peer"]
    )  # fmt: skip
    assert admitted(found["gateway"], 8080) == ["external", "peer"]


def test_each_service_reaches_only_the_stores_it_uses(go_tools: GoTools) -> None:
    """All five use MongoDB and RabbitMQ; the registry RabbitMQ's management API (peer
    users); S3 only the services whose app keeps blobs (auth and the registry pass
    use_blobs=False)."""
    found = policies(render(go_tools))
    dns = {53: ["external"]}
    stores = {27017: ["mongodb"], 5672: ["rabbitmq"]}
    assert reached(found["auth"]) == dns | stores
    assert reached(found["registry"]) == dns | stores | {15672: ["rabbitmq"]}
    for blobs in ("dataset", "orchestrator", "aggregator"):
        assert reached(found[blobs]) == dns | stores | {9000: ["minio"]}, blobs
    assert reached(found["gateway"]) == dns | {8000: SERVICES}
    for service in ("auth", "registry"):
        app = (ROOT / "services" / service / "src" / "peertrain" / service / "app.py").read_text()
        assert "use_blobs=False" in app, service


def values(*files: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}

    def merge(into: dict[str, Any], new: dict[str, Any]) -> None:
        for key, value in new.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    for f in files:
        merge(merged, yaml.safe_load(Path(f).read_text()))
    return merged


def test_the_values_schema_validates_the_shipped_values_and_refuses_bad_ones(
    go_tools: GoTools,
) -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    validator = jsonschema_rs.Draft7Validator(schema)
    default = str(CHART / "values.yaml")
    production = str(ROOT / "deploy" / "helm" / "values-production.yaml")
    assert validator.is_valid(values(default))
    assert validator.is_valid(values(default, production))
    for setting, where in [
        ("peers.device=tpu", "/peers/device"),
        ("rabbitmq.image.tag=latest", "/rabbitmq/image/tag"),
        ("services.auth.replica=2", "/services/auth"),
        ("storeAntiAffinity=maybe", "/storeAntiAffinity"),
        ("minio.replicas=2", "/minio/replicas"),
        ("typo=1", "'typo' not allowed"),
    ]:
        done = subprocess.run(
            [str(go_tools.helm), "template", "peertrain", str(CHART), "--set", setting, *VERSION],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode != 0, setting
        assert "don't meet the specifications of the schema" in done.stderr, done.stderr
        assert where in done.stderr, done.stderr


def test_the_clustered_stores_spread_over_nodes(go_tools: GoTools) -> None:
    for args, kind in [
        ((), "preferredDuringSchedulingIgnoredDuringExecution"),
        (("-f", str(ROOT / "deploy" / "helm" / "values-production.yaml")),
         "requiredDuringSchedulingIgnoredDuringExecution"),
    ]:  # fmt: skip
        docs = render(go_tools, *args)
        for store in ("rabbitmq", "mongodb", "minio"):
            pod = find(docs, "StatefulSet", f"peertrain-{store}")["spec"]["template"]
            [term] = pod["spec"]["affinity"]["podAntiAffinity"][kind]
            term = term.get("podAffinityTerm", term)
            assert term["topologyKey"] == "kubernetes.io/hostname"
            assert term["labelSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()


def test_the_chart_ships_the_alert_rules(go_tools: GoTools) -> None:
    rules = find(render(go_tools), "ConfigMap", "peertrain-alerts")
    assert rules["metadata"]["labels"]["prometheus_rule"] == "1"
    assert (
        rules["data"]["alerts.yml"] == (ROOT / "deploy" / "prometheus" / "alerts.yml").read_text()
    )

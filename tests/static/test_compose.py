"""Static checks of docker-compose.yml and what it uses (no Docker engine needed).

The compose file is the stack for users with Docker; the native stack
(deploy/local/stack.sh) uses the same ports and credentials, so the services' defaults
work against both. These tests keep the two from drifting apart, and check the images
(deploy/docker/), the production override, Prometheus' targets and Grafana's
provisioning without building or starting anything.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from peertrain.common.bus.topology import QUEUE_POLICIES

from .conftest import GoTools, set_policies

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
PROD = ROOT / "docker-compose.prod.yml"
DOCKER = ROOT / "deploy" / "docker"
GRAFANA = ROOT / "deploy" / "grafana"
ONE_SHOT_LABEL = "peertrain.one-shot"
SERVICES = ("auth", "registry", "dataset", "orchestrator", "aggregator")
IMAGES = (*SERVICES, "peer")
ML_IMAGES = ("aggregator", "peer")
DEFAULT = re.compile(r"\$\{([A-Z0-9_]+)(:?-)([^}]*)\}")
REQUIRED = re.compile(r"\$\{([A-Z0-9_]+):\?[^}]+\}")
SECRET = re.compile(r"PASSWORD|PASS$|SECRET|AMQP_URL|MC_HOST")


class ComposeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, plus compose's merge tags (``!reset``, ``!override``)."""


def _untagged(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _tag in ("!reset", "!override"):
    ComposeLoader.add_constructor(_tag, _untagged)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict), "docker-compose.yml is not a mapping"
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    svcs = compose.get("services")
    assert isinstance(svcs, dict) and svcs, "no services in docker-compose.yml"
    return svcs


def labels(svc: dict[str, Any]) -> dict[str, str]:
    """A service's labels, whichever of the two compose syntaxes it uses."""
    raw = svc.get("labels") or {}
    if isinstance(raw, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in raw)
    return {str(k): str(v) for k, v in raw.items()}


def environment(svc: dict[str, Any]) -> dict[str, str]:
    raw = svc.get("environment") or {}
    if isinstance(raw, list):
        return dict(item.split("=", 1) for item in raw)
    return {str(k): str(v) for k, v in raw.items()}


def published(svc: dict[str, Any]) -> set[tuple[int, int]]:
    """(host port, container port) pairs, from short ("9000:9000") or long syntax."""
    pairs = set()
    for port in svc.get("ports") or []:
        if isinstance(port, dict):
            pairs.add((int(port["published"]), int(port["target"])))
        else:
            *_, host, container = str(port).split(":")
            pairs.add((int(host), int(container.split("/")[0])))
    return pairs


def is_one_shot(svc: dict[str, Any]) -> bool:
    return labels(svc).get(ONE_SHOT_LABEL) == "true"


def test_infrastructure_services_present(services: dict[str, dict[str, Any]]) -> None:
    assert {"mongo", "rabbitmq", "minio", "minio-init"} <= services.keys()
    assert services["mongo"]["image"].startswith("mongo:7")
    assert "management" in services["rabbitmq"]["image"]


def test_the_broker_bounds_every_queue_as_the_platform_expects(
    services: dict[str, dict[str, Any]],
) -> None:
    [kind, script] = services["rabbitmq"]["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    assert set_policies(script.replace("$$", "$")) == QUEUE_POLICIES  # compose's escape


def test_every_long_running_service_has_a_healthcheck(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, svc in services.items():
        if is_one_shot(svc):
            continue
        check = svc.get("healthcheck")
        assert check, f"{name} has no healthcheck"
        assert not check.get("disable"), f"{name} disables its healthcheck"
        test = check.get("test")
        assert test and test != ["NONE"], f"{name} has an empty healthcheck test"


def test_one_shot_services_really_are(services: dict[str, dict[str, Any]]) -> None:
    """A container exempted from healthchecks must exit, and others wait for its success."""
    one_shots = {name for name, svc in services.items() if is_one_shot(svc)}
    assert one_shots == {"minio-init"}
    for name in one_shots:
        assert str(services[name].get("restart", "no")) == "no", f"{name} restarts"


def test_original_ports(services: dict[str, dict[str, Any]]) -> None:
    assert (27017, 27017) in published(services["mongo"])
    assert {(5672, 5672), (15672, 15672)} <= published(services["rabbitmq"])
    assert {(9000, 9000), (9001, 9001)} <= published(services["minio"])


def test_development_ports_are_bound_to_loopback(services: dict[str, dict[str, Any]]) -> None:
    """The development file keeps the engines' default passwords: never on the network."""
    for name, svc in services.items():
        for port in svc.get("ports") or []:
            host_ip = port.get("host_ip") if isinstance(port, dict) else str(port).split(":")[0]
            assert host_ip == "127.0.0.1", f"{name} publishes {port} beyond this machine"


def test_auth_believes_forwarded_addresses_from_the_gateway_alone(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    """Login throttling keys on each client's address, not on the gateway's."""
    address = services["gateway"]["networks"]["default"]["ipv4_address"]
    trusted = environment(services["auth"])["PEERTRAIN_AUTH_TRUSTED_PROXIES"]
    assert development(trusted) == development(address) == "172.30.80.10"
    same = DEFAULT.fullmatch(trusted), DEFAULT.fullmatch(address)  # one variable moves both
    assert all(same) and {m.group(1) for m in same if m} == {"PEERTRAIN_GATEWAY_ADDRESS"}
    [subnet] = compose["networks"]["default"]["ipam"]["config"]
    assert ipaddress.ip_address("172.30.80.10") in ipaddress.ip_network(
        development(subnet["subnet"])
    )
    for name, svc in services.items():  # no one else may sit on the gateway's address
        if name != "gateway":
            assert "networks" not in svc, name
    # the gateway hands on its caller's address (it replaces X-Real-IP, appends to XFF)
    template = (ROOT / "deploy" / "gateway" / "gateway.conf.template").read_text()
    assert re.search(r"proxy_set_header X-Real-IP\s+\$remote_addr;", template)
    assert re.search(r"proxy_set_header X-Forwarded-For\s+\$proxy_add_x_forwarded_for;", template)


def development(value: str) -> str:
    """A compose value as it is with nothing set in the environment."""
    return DEFAULT.sub(lambda m: m.group(3), value)


def test_original_credentials(services: dict[str, dict[str, Any]]) -> None:
    """Development defaults, documented, on loopback only (see the test above)."""
    rabbit = environment(services["rabbitmq"])
    assert development(rabbit["RABBITMQ_DEFAULT_USER"]) == "admin"
    assert development(rabbit["RABBITMQ_DEFAULT_PASS"]) == "admin"
    minio = environment(services["minio"])
    assert development(minio["MINIO_ROOT_USER"]) == "minioadmin"
    assert development(minio["MINIO_ROOT_PASSWORD"]) == "minioadmin"


def test_bucket_init_creates_the_bucket(services: dict[str, dict[str, Any]]) -> None:
    init = services["minio-init"]
    command = " ".join(map(str, init.get("entrypoint") or [])) + " " + str(init.get("command", ""))
    assert "peertrain" in command
    assert "minioadmin:minioadmin@minio:9000" in development(" ".join(environment(init).values()))
    assert init["depends_on"]["minio"]["condition"] == "service_healthy"


def test_named_volumes(compose: dict[str, Any], services: dict[str, dict[str, Any]]) -> None:
    declared = set((compose.get("volumes") or {}).keys())
    for name in ("mongo", "rabbitmq", "minio"):
        sources = {str(v).split(":", 1)[0] for v in services[name].get("volumes") or []}
        assert sources & declared, f"{name} keeps its data outside a named volume"


def test_service_template_anchor(compose: dict[str, Any]) -> None:
    """Later services take `<<: *service`: it must wait for the stack and be checked."""
    template = compose["x-service"]
    assert set(template["depends_on"]) == {"mongo", "rabbitmq", "minio-init"}
    assert template["healthcheck"]["test"]
    assert {"mongo-url", "amqp-url", "s3-endpoint"} <= set(compose["x-stack"])


# -- images ------------------------------------------------------------------------------


def dockerfile(name: str) -> str:
    return (DOCKER / f"{name}.Dockerfile").read_text()


def final_stage(text: str) -> str:
    """The instructions of a Dockerfile's last stage (comments dropped)."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    starts = [i for i, ln in enumerate(lines) if ln.upper().startswith("FROM ")]
    assert starts, "no FROM"
    return "\n".join(lines[starts[-1] :])


def test_every_service_and_the_peer_is_built_from_its_own_dockerfile(
    services: dict[str, dict[str, Any]],
) -> None:
    for name in IMAGES:
        build = services[name].get("build")
        assert isinstance(build, dict), f"{name} has no build section"
        assert build.get("context") == ".", f"{name} builds from another context"
        path = ROOT / build["dockerfile"]
        assert path == DOCKER / f"{name}.Dockerfile", f"{name} uses {build['dockerfile']}"
        assert path.is_file(), f"{path} is missing"
    for name, svc in services.items():
        if "build" in svc:
            assert (ROOT / svc["build"]["dockerfile"]).is_file(), f"{name}: no Dockerfile"


@pytest.mark.parametrize("name", IMAGES)
def test_dockerfile_is_multi_stage_non_root_and_checked(name: str) -> None:
    text = dockerfile(name)
    froms = re.findall(r"^FROM\s", text, flags=re.MULTILINE)
    assert len(froms) >= 2, f"{name}.Dockerfile is not multi-stage"
    last = final_stage(text)
    users = re.findall(r"^USER\s+(\S+)", last, flags=re.MULTILINE)
    assert users, f"{name}.Dockerfile runs its last stage as root (no USER)"
    assert users[-1] not in {"root", "0", "0:0"}, f"{name}.Dockerfile runs as {users[-1]}"
    assert re.search(r"^HEALTHCHECK\s+(?!NONE)", last, flags=re.MULTILINE), (
        f"{name}.Dockerfile has no HEALTHCHECK"
    )
    assert "uv.lock" in text and "--frozen" in text, f"{name}.Dockerfile ignores the lock"


def test_gateway_image_runs_nginx_unprivileged(services: dict[str, dict[str, Any]]) -> None:
    """Not root: nginx's unprivileged build, on ports above 1024 only."""
    text = dockerfile("gateway")
    assert len(re.findall(r"^FROM\s", text, flags=re.MULTILINE)) >= 2
    last = final_stage(text)
    assert re.match(r"FROM nginxinc/nginx-unprivileged:\d+\.\d+\.\d+-alpine\b", last), last
    users = re.findall(r"^USER\s+(\S+)", last, flags=re.MULTILINE)
    assert users and users[-1] not in {"root", "0", "0:0"}, users
    assert re.search(r"^HEALTHCHECK\s+(?!NONE)", last, flags=re.MULTILINE)
    gateway = services["gateway"]
    assert gateway["build"]["dockerfile"] == "deploy/docker/gateway.Dockerfile"
    assert {container for _, container in published(gateway)} == {8080}
    prod = yaml.load(PROD.read_text(), Loader=ComposeLoader)["services"]["gateway"]
    remote = yaml.load(REMOTE.read_text(), Loader=ComposeLoader)["services"]["gateway"]
    listens = [environment(gateway)["GATEWAY_LISTEN"], environment(prod)["GATEWAY_LISTEN"]]
    listens += re.findall(r"^\s*listen (\S+)", S3_DOOR.read_text(), flags=re.MULTILINE)
    for listen in listens:
        assert int(listen.split()[0]) > 1024, listen
    for ports in (prod["ports"], remote["ports"]):
        assert all(int(str(p).rsplit(":", 1)[1]) > 1024 for p in ports), ports


def locked_version(package: str) -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    versions = {p["version"] for p in lock["package"] if p["name"] == package}
    assert len(versions) == 1, f"{package}: {versions} in uv.lock"
    return versions.pop()


@pytest.mark.parametrize("name", ML_IMAGES)
def test_ml_images_take_the_locked_torch_from_the_cpu_index(name: str) -> None:
    text = dockerfile(name)
    assert "download.pytorch.org/whl/cpu" in text
    match = re.search(r"^ARG TORCH_VERSION=(\S+)", text, flags=re.MULTILINE)
    assert match, f"{name}.Dockerfile does not pin torch"
    assert match.group(1) == locked_version("torch")
    # the CUDA stack the PyPI wheel depends on stays out of the image
    assert "nvidia-" in text and "--no-deps" in text


def test_non_ml_images_do_not_install_torch() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    deps = {p["name"]: p for p in lock["package"]}

    def closure(name: str, seen: set[str]) -> set[str]:
        if name in seen or name not in deps:
            return seen
        seen.add(name)
        for dep in deps[name].get("dependencies", []):
            closure(dep["name"], seen)
        return seen

    for name in ("auth", "registry", "dataset", "orchestrator"):
        assert "torch" not in closure(f"peertrain-{name}", set()), f"{name} pulls in torch"


def test_peer_enrolls_from_the_environment_and_scales(
    services: dict[str, dict[str, Any]],
) -> None:
    peer = services["peer"]
    entrypoint = DOCKER / "peer-entrypoint.sh"
    assert entrypoint.is_file()
    script = entrypoint.read_text()
    assert "PEERTRAIN_PEER_ENROLLMENT_TOKENS" in script and "identity.json" in script
    assert "peer-entrypoint.sh" in dockerfile("peer")
    assert "PEERTRAIN_PEER_ENROLLMENT_TOKENS" in environment(peer)
    # replicas must not collide: no fixed name, no published port
    assert "container_name" not in peer and not peer.get("ports")
    assert peer["depends_on"]["gateway"]["condition"] == "service_healthy"


def test_services_are_healthy_when_ready(compose: dict[str, Any]) -> None:
    """Dependents wait for /readyz (connected to the stack), not just a live process."""
    assert "http://127.0.0.1:8000/readyz" in " ".join(compose["x-service"]["healthcheck"]["test"])


def test_cuda_peer_image_beside_the_cpu_one(services: dict[str, dict[str, Any]]) -> None:
    cpu, cuda = services["peer"], services["peer-cuda"]
    for peer in (cpu, cuda):
        assert peer["build"]["dockerfile"] == "deploy/docker/peer.Dockerfile"
    args = cuda["build"]["args"]
    assert re.fullmatch(r"https://download\.pytorch\.org/whl/cu\d+", args["TORCH_INDEX"])
    assert args["PEER_DEVICE"] == "cuda"
    assert cuda["image"].startswith("peertrain/peer-cuda:")
    [gpus] = cuda["deploy"]["resources"]["reservations"]["devices"]
    assert gpus["capabilities"] == ["gpu"]
    text = dockerfile("peer")
    assert re.search(r"^ARG TORCH_INDEX=", text, flags=re.MULTILINE)
    assert "ARG PEER_DEVICE=cpu" in final_stage(text)
    assert "PEERTRAIN_PEER_DEVICE=${PEER_DEVICE}" in final_stage(text)


def test_peer_identities_live_on_named_volumes(
    compose: dict[str, Any], services: dict[str, dict[str, Any]]
) -> None:
    """`down` removes containers and their anonymous volumes, never named ones."""
    declared = set(compose["volumes"])
    sources = set()
    for name in ("peer", "peer-cuda"):
        [volume] = services[name]["volumes"]
        source, target = str(volume).split(":")
        assert source in declared, f"{name}: {source} is not a named volume"
        assert environment(services[name])["PEERTRAIN_PEER_SLOTS_DIR"] == target
        sources.add(source)
    assert len(sources) == 2, "the CPU and CUDA peers share their identities"


def test_peer_replicas_take_distinct_identity_slots_and_keep_them(tmp_path: Path) -> None:
    """Two replicas at once hold slots 1 and 2; after both stop, a new one gets slot 1."""
    bin_dir, slots = tmp_path / "bin", tmp_path / "slots"
    bin_dir.mkdir()
    slots.mkdir()
    release = tmp_path / "release"
    stub = bin_dir / "peertrain-peer"
    # The runtime stand-in: says which config directory it got, then runs until released.
    stub.write_text(
        "#!/bin/sh\n"
        'echo "$PEERTRAIN_PEER_CONFIG_DIR"\n'
        f"while [ ! -e {release} ]; do sleep 0.05; done\n"
    )
    stub.chmod(0o755)
    for n in (1, 2):
        (slots / str(n)).mkdir()
        (slots / str(n) / "identity.json").write_text("{}")  # enrolled: no token needed
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "PEERTRAIN_PEER_CONFIG_DIR": str(tmp_path / "unused"),
        "PEERTRAIN_PEER_SLOTS_DIR": str(slots),
    }
    entrypoint = [str(DOCKER / "peer-entrypoint.sh"), "run"]

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(["sh", *entrypoint], env=env, stdout=subprocess.PIPE, text=True)

    first = start()
    assert first.stdout is not None
    assert first.stdout.readline().strip() == str(slots / "1")
    second = start()
    assert second.stdout is not None
    assert second.stdout.readline().strip() == str(slots / "2")
    release.touch()
    assert first.wait(timeout=60) == 0 and second.wait(timeout=60) == 0
    again = subprocess.run(["sh", *entrypoint], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(slots / "1")


# -- secrets -----------------------------------------------------------------------------


def secret_values(svcs: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {
        f"{name}.{key}": value
        for name, svc in svcs.items()
        for key, value in environment(svc).items()
        if SECRET.search(key)
    }


def test_no_literal_secrets_in_compose(services: dict[str, dict[str, Any]]) -> None:
    """Every secret comes from a variable (the development value only as its default)."""
    for where, value in secret_values(services).items():
        if "AMQP_URL" in where and "@" not in value:
            continue  # the address handed to peers carries no credentials
        assert DEFAULT.search(value) or REQUIRED.search(value), f"{where} is a literal"


def test_production_override_requires_every_secret(
    services: dict[str, dict[str, Any]],
) -> None:
    prod = yaml.load(PROD.read_text(), Loader=ComposeLoader)["services"]
    required: set[str] = set()
    for where, value in secret_values(prod).items():
        assert not DEFAULT.search(value), f"{where} has a default in the production override"
        found = REQUIRED.findall(value)
        assert found, f"{where} is not required (`${{VAR:?message}}`) in production"
        required.update(found)
    base_vars = {m.group(1) for v in secret_values(services).values() for m in DEFAULT.finditer(v)}
    assert base_vars - {"PEERTRAIN_PEER_AMQP_URL"} <= required, (
        f"secrets with a development default but no production requirement: "
        f"{sorted(base_vars - required)}"
    )
    for name in SERVICES:
        env = environment(prod[name])
        assert env[f"PEERTRAIN_{name.upper()}_ENVIRONMENT"] == "production", name


# -- gateway, Prometheus, Grafana --------------------------------------------------------


def mounts(svc: dict[str, Any]) -> dict[str, Path]:
    """Container path -> host path of a service's bind mounts."""
    found = {}
    for volume in svc.get("volumes") or []:
        source, target, *_ = str(volume).split(":")
        if source.startswith("."):
            found[target] = ROOT / source
    return found


def test_gateway_gets_every_placeholder_of_its_template(
    services: dict[str, dict[str, Any]],
) -> None:
    gateway = services["gateway"]
    template = mounts(gateway)["/etc/nginx/templates/default.conf.template"]
    placeholders = set(re.findall(r"\$\{(GATEWAY_[A-Z_]+)\}", template.read_text()))
    env = environment(gateway)
    assert placeholders and placeholders <= env.keys(), placeholders - env.keys()
    for name in SERVICES:
        assert env[f"GATEWAY_{name.upper()}_UPSTREAM"] == f"{name}:8000"
        assert gateway["depends_on"][name]["condition"] == "service_healthy"
    assert (8080, 8080) in published(gateway)


def scrape_targets(path: Path) -> dict[str, list[str]]:
    """Job -> its static targets, and ``dns:<name>:<port>`` for each DNS-found one."""
    config = yaml.safe_load(path.read_text())
    return {
        job["job_name"]: [t for sc in job.get("static_configs", []) for t in sc["targets"]]
        + [
            f"dns:{name}:{sd['port']}"
            for sd in job.get("dns_sd_configs", [])
            for name in sd["names"]
            if sd.get("type") == "A"
        ]
        for job in config["scrape_configs"]
    }


def test_prometheus_scrapes_every_service() -> None:
    local = scrape_targets(ROOT / "deploy" / "prometheus" / "prometheus.yml")
    ports = dict(zip(SERVICES, range(8001, 8006), strict=True))
    for name, port in ports.items():
        assert local[name] == [f"127.0.0.1:{port}"], name
    compose = scrape_targets(ROOT / "deploy" / "prometheus" / "prometheus.compose.yml")
    for name in SERVICES:  # every replica of a scaled service: DNS finds them all
        assert compose[name] == [f"dns:{name}:8000"], name
    # the dashboards select on job names: the same jobs in both
    assert set(local) - {"ferretdb"} == set(compose), set(local) ^ set(compose)


def test_compose_mounts_the_compose_prometheus_config(
    services: dict[str, dict[str, Any]],
) -> None:
    mounted = mounts(services["prometheus"])
    assert mounted["/etc/prometheus/prometheus.yml"].name == "prometheus.compose.yml"
    assert mounted["/etc/prometheus/prometheus.yml"].is_file()


def dashboards() -> dict[str, dict[str, Any]]:
    paths = sorted((GRAFANA / "dashboards").glob("*.json"))
    return {p.name: json.loads(p.read_text()) for p in paths}


def datasource_refs(node: Any) -> list[Any]:
    """Every ``datasource`` value anywhere in a dashboard."""
    if isinstance(node, dict):
        found = [node["datasource"]] if "datasource" in node else []
        return found + [r for v in node.values() for r in datasource_refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in datasource_refs(v)]
    return []


def test_dashboards_parse_and_have_queries() -> None:
    boards = dashboards()
    assert {"training.json", "peers.json", "platform.json"} <= boards.keys()
    uids = [b["uid"] for b in boards.values()]
    assert len(set(uids)) == len(uids), "dashboard uids collide"
    for name, board in boards.items():
        assert board["panels"], f"{name} has no panels"
        ids = [p["id"] for p in board["panels"]]
        assert len(set(ids)) == len(ids), f"{name}: panel ids collide"
        for panel in board["panels"]:
            exprs = [t.get("expr", "").strip() for t in panel.get("targets", [])]
            assert exprs and all(exprs), f"{name} / {panel['title']}: a panel without a query"


def test_grafana_provisioning_resolves(services: dict[str, dict[str, Any]]) -> None:
    grafana = services["grafana"]
    mounted = mounts(grafana)
    provisioning = mounted["/etc/grafana/provisioning"]
    assert provisioning == GRAFANA / "provisioning"
    sources = [
        ds
        for f in sorted((provisioning / "datasources").glob("*.yml"))
        for ds in yaml.safe_load(f.read_text())["datasources"]
    ]
    by_uid = {ds["uid"]: ds for ds in sources}
    assert len(by_uid) == len(sources), "datasource uids collide"
    # the datasource URL: a variable Grafana expands, set in its environment
    for ds in sources:
        for var in re.findall(r"\$\{?([A-Z_]+)\}?", ds["url"]):
            assert environment(grafana)[var] == "http://prometheus:9090", var
    providers = [
        pr
        for f in sorted((provisioning / "dashboards").glob("*.yml"))
        for pr in yaml.safe_load(f.read_text())["providers"]
    ]
    assert providers, "no dashboards provider"
    for provider in providers:
        path = provider["options"]["path"]
        assert mounted.get(path) == GRAFANA / "dashboards", f"provider path {path} is not mounted"
    for name, board in dashboards().items():
        for ref in datasource_refs(board):
            uid = ref["uid"] if isinstance(ref, dict) else ref
            assert uid in by_uid, f"{name}: datasource {ref} is not provisioned"
            assert by_uid[uid]["type"] == "prometheus"
    home = environment(grafana).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH", "")
    if home:
        assert Path(home).parent.as_posix() in mounted and Path(home).name in dashboards()


# -- the production compose, through the loader `docker compose` uses --------------------
#
# deploy/check/compose (compose-go v2.16.2) merges the files, applies !reset/!override and
# interpolates; then only the gateway may publish a port, no image may float, and every
# credential must come from a required variable or a secret.


def compose_check(tools: GoTools, *files: Path) -> subprocess.CompletedProcess[str]:
    args = [str(tools.compose_check)]
    for f in files:
        args += ["-f", str(f)]
    # The shell's variables are ignored by the checker; a bare environment shows it.
    return subprocess.run(
        args, capture_output=True, text=True, timeout=120, cwd=ROOT, env={"PATH": "/usr/bin:/bin"}
    )


def test_production_compose_opens_only_the_gateway_pins_images_and_takes_secrets(
    go_tools: GoTools,
) -> None:
    done = compose_check(go_tools, COMPOSE, PROD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("only gateway publishes: 443:8443/tcp"), done.stdout


def test_the_development_compose_alone_fails_the_production_checks(go_tools: GoTools) -> None:
    """The check is real: the development file publishes every engine, with defaults."""
    done = compose_check(go_tools, COMPOSE)
    assert done.returncode == 1, done.stdout + done.stderr
    problems = done.stdout.splitlines()
    assert "mongo: publishes 27017:27017/tcp (only gateway may publish a port)" in problems
    assert any(p.startswith("rabbitmq: RABBITMQ_DEFAULT_PASS") and "admin" in p for p in problems)
    assert any(p.startswith('auth: image "peertrain/auth:dev" floats') for p in problems)


def test_compose_check_names_each_kind_of_breach(go_tools: GoTools, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "services:\n"
        "  mongo:\n    ports: ['127.0.0.1:27017:27017']\n"
        "  minio:\n    image: minio/minio:latest\n"
        "  grafana:\n    environment:\n      GF_SECURITY_ADMIN_PASSWORD: hunter2\n"
        "  auth:\n    environment:\n"
        "      PEERTRAIN_AUTH_AMQP_URL: amqp://admin:admin@rabbitmq:5672/\n"
        "  prometheus:\n    network_mode: host\n    ports: !reset []\n"
    )
    done = compose_check(go_tools, COMPOSE, PROD, bad)
    assert done.returncode == 1, done.stdout + done.stderr
    assert sorted(done.stdout.splitlines()) == [
        "auth: PEERTRAIN_AUTH_AMQP_URL is not from the environment or a secret: "
        "its password is written in the file",
        "grafana: GF_SECURITY_ADMIN_PASSWORD is not from the environment or a secret: "
        "it is written in the file",
        'minio: image "minio/minio:latest" floats: the tag latest',
        "mongo: publishes 27017:27017/tcp (only gateway may publish a port)",
        "prometheus: network_mode host opens every port it listens on",
    ]


def test_compose_check_refuses_files_that_do_not_load(go_tools: GoTools, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("services:\n  auth:\n    ports: [{published: 1, target: nope}]\n")
    done = compose_check(go_tools, COMPOSE, broken)
    assert done.returncode == 2, done.stdout + done.stderr


def test_production_gateway_serves_https_with_the_deployers_certificate() -> None:
    prod = yaml.load(PROD.read_text(), Loader=ComposeLoader)
    gateway = prod["services"]["gateway"]
    assert environment(gateway)["GATEWAY_LISTEN"] == "8443 ssl"
    conf = mounts(gateway)["/etc/nginx/conf.d/tls.conf"].read_text()
    for secret, directive in (("tls_cert", "ssl_certificate"), ("tls_key", "ssl_certificate_key")):
        assert secret in gateway["secrets"]
        assert re.search(rf"^{directive}\s+/run/secrets/{secret};", conf, flags=re.MULTILINE)
        assert REQUIRED.fullmatch(prod["secrets"][secret]["file"]), secret
    assert "https://127.0.0.1:8443/healthz" in gateway["healthcheck"]["test"]


@pytest.fixture(scope="module")
def prod_model(go_tools: GoTools, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """docker-compose.yml with the production override, merged by compose's own loader."""
    dump = tmp_path_factory.mktemp("prod") / "merged.json"
    args = [str(go_tools.compose_check), "-dump", str(dump), "-f", str(COMPOSE), "-f", str(PROD)]
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=120, cwd=ROOT, env={"PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    model: dict[str, Any] = json.loads(dump.read_text())
    return model


def test_the_development_file_as_compose_loads_it_publishes_on_loopback_only(
    go_tools: GoTools, tmp_path: Path
) -> None:
    """The merged model, as `docker compose config` has it: every published port is
    bound to 127.0.0.1, whatever syntax the file uses for it."""
    dump = tmp_path / "dev.json"
    args = [str(go_tools.compose_check), "-dump", str(dump), "-f", str(COMPOSE)]
    subprocess.run(args, capture_output=True, timeout=120, cwd=ROOT, env={"PATH": "/usr/bin:/bin"})
    merged = json.loads(dump.read_text())["services"]
    published = {n: svc["ports"] for n, svc in merged.items() if svc.get("ports")}
    assert {"mongo", "rabbitmq", "minio", "gateway", "grafana"} <= set(published)
    for name, ports in published.items():
        for port in ports:
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"


def test_production_containers_are_read_only_limited_and_checked(
    prod_model: dict[str, Any],
) -> None:
    """Every container: a read-only root filesystem with a tmpfs /tmp, CPU and memory
    limits, and (long-running ones) the healthcheck of docker-compose.yml."""
    merged = prod_model["services"]
    assert set(merged) >= {*SERVICES, "gateway", "mongo", "rabbitmq", "minio", "peer"}
    for name, svc in merged.items():
        assert svc.get("read_only") is True, f"{name}: root filesystem is writable"
        assert any(t.split(":")[0] == "/tmp" for t in svc.get("tmpfs") or []), name
        limits = (svc.get("deploy") or {}).get("resources", {}).get("limits", {})
        assert float(limits.get("cpus") or 0) > 0, f"{name}: no CPU limit"
        assert int(limits.get("memory") or 0) > 0, f"{name}: no memory limit"
        if labels(svc).get(ONE_SHOT_LABEL) != "true":
            assert svc.get("healthcheck", {}).get("test"), f"{name}: no healthcheck"
    # what the images write outside their volumes lands on a tmpfs
    assert "/etc/nginx/conf.d:size=1m" in merged["gateway"]["tmpfs"]
    assert merged["peer"]["deploy"]["replicas"] == 0
    [gpu] = merged["peer-cuda"]["deploy"]["resources"]["reservations"]["devices"]
    assert gpu["capabilities"] == ["gpu"]


def test_the_production_env_example_names_every_required_variable() -> None:
    """deploy/docker/production.env.example lists what the override requires, all empty."""
    required = set(REQUIRED.findall(PROD.read_text()))
    example = (DOCKER / "production.env.example").read_text().splitlines()
    entries = dict(ln.split("=", 1) for ln in example if ln and not ln.startswith("#"))
    assert set(entries) == required
    assert all(v == "" for v in entries.values()), "the example must hold no value"


# -- the opt-in doors for peers on other machines (docker-compose.remote-peers.yml) ------
#
# Loaded with base and production through the same loader; -dump gives the merged model
# (as `docker compose config` would print it) for what the checker itself does not judge.

REMOTE = ROOT / "docker-compose.remote-peers.yml"
S3_DOOR = ROOT / "deploy" / "gateway" / "s3-door.conf"
RABBITMQ_REMOTE_CONF = ROOT / "deploy" / "rabbitmq" / "remote-peers.conf"
PUBLIC_HOST = "from-env-PEERTRAIN_PUBLIC_HOST"  # the checker's placeholder for ${VAR:?}


@pytest.fixture(scope="module")
def remote_model(go_tools: GoTools, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    dump = tmp_path_factory.mktemp("remote") / "merged.json"
    args = [str(go_tools.compose_check), "-also-publish", "rabbitmq", "-dump", str(dump)]
    for f in (COMPOSE, PROD, REMOTE):
        args += ["-f", str(f)]
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=120, cwd=ROOT, env={"PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith(
        "only gateway, rabbitmq publish: gateway 443:8443/tcp 9443:9443/tcp; rabbitmq 5671:5671/tcp"
    ), done.stdout
    model: dict[str, Any] = json.loads(dump.read_text())
    return model


def merged_ports(svc: dict[str, Any]) -> set[tuple[str, int]]:
    return {(str(p.get("published", "")), int(p["target"])) for p in svc.get("ports") or []}


def test_remote_peer_doors_publish_only_the_gateway_and_amqps(
    remote_model: dict[str, Any],
) -> None:
    opened = {
        name: merged_ports(svc)
        for name, svc in remote_model["services"].items()
        if svc.get("ports") or svc.get("network_mode") == "host"
    }
    assert opened == {
        "gateway": {("443", 8443), ("9443", 9443)},
        "rabbitmq": {("5671", 5671)},  # AMQPS only: plain 5672 stays on the compose network
    }


def test_remote_peer_doors_do_not_load_without_the_production_override(
    go_tools: GoTools,
) -> None:
    """They use its TLS secrets: over the development file alone compose refuses them."""
    done = compose_check(go_tools, COMPOSE, REMOTE)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "undefined secret tls_cert" in done.stderr


def test_remote_peer_doors_pin_images(remote_model: dict[str, Any]) -> None:
    """The checker already refuses floating tags; the file changes no image at all."""
    remote = yaml.load(REMOTE.read_text(), Loader=ComposeLoader)
    assert all("image" not in svc for svc in remote["services"].values())
    for name, svc in remote_model["services"].items():
        image = svc["image"]
        assert not image.endswith((":latest", ":dev")) and ":" in image, f"{name}: {image}"


def test_remote_peers_are_told_the_public_addresses(remote_model: dict[str, Any]) -> None:
    services = remote_model["services"]
    registry = services["registry"]["environment"]
    assert registry["PEERTRAIN_REGISTRY_PEER_AMQP_URL"] == f"amqps://{PUBLIC_HOST}:5671/"
    orchestrator = services["orchestrator"]["environment"]
    assert orchestrator["PEERTRAIN_ORCHESTRATOR_S3_PRESIGN_ENDPOINT_URL"] == (
        f"https://{PUBLIC_HOST}:9443"
    )
    # the host is required (`${VAR:?message}`), as every setting of the production file
    text = REMOTE.read_text()
    assert "PEERTRAIN_PUBLIC_HOST:-" not in text
    assert REQUIRED.search(text) and all(
        m.group(1) == "PEERTRAIN_PUBLIC_HOST" for m in REQUIRED.finditer(text)
    )


def merged_mounts(svc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["target"]: v for v in svc.get("volumes") or []}


def test_rabbitmq_serves_amqps_with_the_gateways_certificate(
    remote_model: dict[str, Any],
) -> None:
    rabbitmq = remote_model["services"]["rabbitmq"]
    assert {s["source"] for s in rabbitmq["secrets"]} == {"tls_cert", "tls_key"}
    for name in ("tls_cert", "tls_key"):  # the gateway's own secrets, from the environment
        assert remote_model["secrets"][name]["file"].endswith(
            "from-env-" + {"tls_cert": "PEERTRAIN_TLS_CERT", "tls_key": "PEERTRAIN_TLS_KEY"}[name]
        )
    conf_mount = merged_mounts(rabbitmq)["/etc/rabbitmq/conf.d/30-remote-peers.conf"]
    assert conf_mount["type"] == "bind" and conf_mount["read_only"] is True
    assert Path(conf_mount["source"]) == RABBITMQ_REMOTE_CONF
    conf = rabbitmq_conf(RABBITMQ_REMOTE_CONF.read_text())
    assert conf["listeners.ssl.default"] == "5671"
    assert conf["loopback_users.guest"] == "true"
    # the secrets are copied where the rabbitmq user can read them, then the image's
    # entrypoint starts the server (dropping root)
    bash, flag, script = rabbitmq["command"]
    assert (bash, flag) == ("bash", "-c")
    for secret, key in (("tls_cert", "certfile"), ("tls_key", "keyfile")):
        target = conf[f"ssl_options.{key}"]
        assert re.search(
            rf"install -m 0400 -o rabbitmq -g rabbitmq /run/secrets/{secret} {target}( |$)", script
        )
    assert script.endswith("&& exec docker-entrypoint.sh rabbitmq-server")


def rabbitmq_conf(text: str) -> dict[str, str]:
    """The key = value lines of a rabbitmq.conf (sysctl format)."""
    pairs = (ln.split("=", 1) for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def test_rabbitmq_remote_conf_matches_the_local_stacks_tls_settings() -> None:
    """The local stack runs these keys (tests/stack/test_remote_peer.py): the same here."""
    local_sh = (ROOT / "deploy" / "local" / "rabbitmq.sh").read_text()
    local = {
        m.group(1): m.group(2).strip()
        for m in re.finditer(
            r"^((?:listeners|ssl_options|loopback_users)\.[\w.]+) = (.*)$",
            local_sh,
            flags=re.MULTILINE,
        )
    }

    def general(key: str) -> str:
        return re.sub(r"^listeners\.ssl\.\w+$", "listeners.ssl.$name", key)

    conf = rabbitmq_conf(RABBITMQ_REMOTE_CONF.read_text())
    assert {general(k) for k in conf} <= {general(k) for k in local}, conf.keys() - local.keys()
    for key in ("ssl_options.verify", "ssl_options.fail_if_no_peer_cert", "loopback_users.guest"):
        assert conf[key] == local[key], key
    # and against the schema of the RabbitMQ installed here, where there is one
    schemas = sorted(
        Path("/usr/lib/rabbitmq/lib").glob("*/plugins/rabbit-*/priv/schema/rabbit.schema")
    )
    if schemas:
        mappings = set(re.findall(r'\{mapping, "([^"]+)"', schemas[-1].read_text()))
        for key in conf:
            pattern = general(key) if key.startswith("listeners.ssl.") else key
            pattern = re.sub(r"^loopback_users\.\w+$", "loopback_users.$user", pattern)
            assert pattern in mappings, f"{key}: not a RabbitMQ setting ({schemas[-1]})"


def test_gateway_s3_door_passes_only_presigned_requests_to_minio(
    remote_model: dict[str, Any],
) -> None:
    gateway = remote_model["services"]["gateway"]
    mount = merged_mounts(gateway)["/etc/nginx/conf.d/s3-door.conf"]
    assert mount["type"] == "bind" and mount["read_only"] is True
    assert Path(mount["source"]) == S3_DOOR
    assert merged_mounts(gateway)["/etc/nginx/conf.d/tls.conf"]["read_only"] is True
    conf = S3_DOOR.read_text()
    assert re.search(r"^\s*listen 9443 ssl;", conf, flags=re.MULTILINE)
    assert re.search(r"^\s*proxy_pass http://minio:9000;", conf, flags=re.MULTILINE)
    assert re.search(r"^\s*if \(\$http_authorization\) \{ return 403; \}", conf, flags=re.MULTILINE)
    # presigned GETs of objects, POST forms to the bucket, 403 for the rest (what each
    # passes and refuses: tests/static/test_s3_door.py, in a real nginx)
    methods = re.findall(r"limit_except ([A-Z ]+) \{ deny all; \}", conf)
    assert methods == ["GET", "POST"]  # GET allows HEAD too
    assert re.search(r"^\s*location / \{ return 403; \}", conf, flags=re.MULTILINE)
    assert re.search(r"proxy_set_header Host \$http_host;", conf)  # the host it was signed for
    for secret, directive in (("tls_cert", "ssl_certificate"), ("tls_key", "ssl_certificate_key")):
        assert re.search(rf"^\s*{directive}\s+/run/secrets/{secret};", conf, flags=re.MULTILINE)
    # the log format it names is the gateway's (defined in the rendered template)
    template = (ROOT / "deploy" / "gateway" / "gateway.conf.template").read_text()
    assert "log_format peertrain_json" in template and "peertrain_json;" in conf


def test_gateway_s3_door_is_accepted_by_nginx(tmp_path: Path) -> None:
    """`nginx -t` on a throwaway nginx.conf that includes the door, with a dummy certificate."""
    if not shutil.which("nginx"):
        pytest.skip("nginx is not installed")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "peertrain.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "tls_cert").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (secrets / "tls_key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    # Only what needs the compose network or its secrets changes: their paths, and minio's
    # name (nginx resolves proxy_pass hosts when it reads the file).
    door = S3_DOOR.read_text()
    assert "/run/secrets/" in door and "http://minio:9000" in door
    door = door.replace("/run/secrets/", f"{secrets}/").replace(
        "http://minio:9000", "http://127.0.0.1:9000"
    )
    (tmp_path / "logs").mkdir()
    (tmp_path / "s3-door.conf").write_text(door)
    (tmp_path / "nginx.conf").write_text(
        "pid nginx.pid;\n"
        "events {}\n"
        "http {\n"
        "    client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp;\n"
        "    uwsgi_temp_path tmp; scgi_temp_path tmp;\n"
        "    log_format peertrain_json '$remote_addr';\n"
        "    include s3-door.conf;\n"
        "}\n"
    )
    done = subprocess.run(
        ["nginx", "-t", "-p", f"{tmp_path}/", "-c", "nginx.conf", "-e", "logs/error.log"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr

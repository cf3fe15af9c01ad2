"""``peertrain-peer``: enroll this machine, run it as a peer, show its status."""

from __future__ import annotations

import asyncio
import json
import platform
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from peertrain.common.logging import configure_logging
from peertrain.common.processes import pid_alive

from .api import ApiError, PeerApi
from .config import PeerSettings
from .files import BROKER_FILE, IDENTITY_FILE, ConfigError, read_model, remove, write_json
from .identity import Identity, load_identity
from .status import load_status

__all__ = ["app", "main"]

app = typer.Typer(
    name="peertrain-peer",
    help="The PeerTrain peer runtime: lend this machine to training jobs.",
    no_args_is_help=True,
    add_completion=False,
)

ConfigDir = Annotated[
    Path | None,
    typer.Option(
        "--config-dir",
        envvar="PEERTRAIN_PEER_CONFIG_DIR",
        help="Where identity and credentials live (default: the user's config directory).",
    ),
]


def _settings(config_dir: Path | None, **overrides: object) -> PeerSettings:
    values = {k: v for k, v in overrides.items() if v is not None}
    if config_dir is not None:
        values["config_dir"] = config_dir
    return PeerSettings(**values)  # type: ignore[arg-type]


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"peertrain-peer: {message}", err=True)
    return typer.Exit(code)


@app.command()
def enroll(
    token: Annotated[str, typer.Option("--token", help="The enrollment token a user created.")],
    api: Annotated[str, typer.Option("--api", help="The gateway URL.")] = "http://127.0.0.1:8080",
    name: Annotated[str | None, typer.Option("--name", help="A name for this peer.")] = None,
    config_dir: ConfigDir = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing identity.")] = False,
) -> None:
    """Exchange an enrollment token for this peer's identity (stored with mode 0600)."""
    settings = _settings(config_dir)
    directory = settings.config_dir
    try:
        existing = read_model(directory, IDENTITY_FILE, Identity)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if existing is not None and not force:
        raise _fail(f"already enrolled as {existing.peer_id} ({directory}); use --force")
    peer_name = name or re.sub(r"[^A-Za-z0-9._-]", "-", platform.node()).strip("-.") or "peer"
    peer_name = peer_name[:64]
    try:
        data = asyncio.run(PeerApi(api).enroll(token, peer_name))
    except ApiError as exc:
        raise _fail(str(exc)) from None
    identity = Identity(
        api=api.rstrip("/"),
        peer_id=data["peer_id"],
        peer_secret=data["peer_secret"],
        owner_id=data["owner_id"],
        name=data["name"],
        enrolled_at=datetime.now(UTC),
    )
    path = write_json(directory, IDENTITY_FILE, identity.model_dump(mode="json"))
    remove(directory, BROKER_FILE)
    typer.echo(
        json.dumps({"peer_id": identity.peer_id, "name": identity.name, "identity": str(path)})
    )


@app.command("run")
def run_command(
    config_dir: ConfigDir = None,
    interval: Annotated[
        float | None,
        typer.Option("--interval", help="Heartbeat interval in seconds (default 5)."),
    ] = None,
    api: Annotated[str | None, typer.Option("--api", help="Override the enrolled API URL.")] = None,
    log_level: Annotated[str | None, typer.Option("--log-level")] = None,
    slowdown: Annotated[
        float | None,
        typer.Option(
            "--slowdown",
            min=1.0,
            help="Wait (F - 1) x each task's compute time after training: F times slower "
            "(benchmarks of uneven peers; default 1).",
        ),
    ] = None,
) -> None:
    """Announce this machine and heartbeat until SIGTERM; take work from its queue."""
    from .runtime import run  # the listener's imports are heavy: only for `run`

    settings = _settings(
        config_dir, heartbeat_interval_s=interval, log_level=log_level, slowdown=slowdown
    )
    configure_logging("peer", level=settings.log_level, json=not sys.stderr.isatty())
    try:
        asyncio.run(run(settings, api_url=api))
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None
    except ApiError as exc:
        raise _fail(f"the platform refused this peer: {exc}", 3) from None


@app.command()
def status(
    config_dir: ConfigDir = None,
    remote: Annotated[
        bool, typer.Option("--remote", help="Also ask the registry what it sees.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show this peer's identity, connection and last heartbeat."""
    settings = _settings(config_dir)
    try:
        identity = load_identity(settings.config_dir)
        runtime = load_status(settings.config_dir)
    except ConfigError as exc:
        raise _fail(str(exc), 2) from None
    out: dict[str, object] = {
        "peer_id": identity.peer_id,
        "name": identity.name,
        "owner_id": identity.owner_id,
        "api": identity.api,
        "config_dir": str(settings.config_dir),
    }
    if runtime is None:
        out["running"] = False
    else:
        running = runtime.state != "stopped" and pid_alive(runtime.pid)
        out.update(
            running=running,
            pid=runtime.pid if running else None,
            state=runtime.state if running else "stopped",
            broker=runtime.broker,
            queue=runtime.queue,
            last_heartbeat_at=runtime.last_heartbeat_at,
            heartbeats_sent=runtime.heartbeats_sent,
            reconnects=runtime.reconnects,
            tasks_received=runtime.tasks_received,
            last_error=runtime.last_error,
        )
    if remote:
        out["registry"] = asyncio.run(_remote(identity))
    if as_json:
        typer.echo(json.dumps(out, default=str))
        return
    for key, value in out.items():
        typer.echo(f"{key:18} {value if value is not None else '-'}")


async def _remote(identity: Identity) -> object:
    api = PeerApi(identity.api, timeout_s=5)
    try:
        token = await api.token(identity.peer_id, identity.peer_secret)
        return await api.whoami(identity.peer_id, token.access_token)
    except ApiError as exc:
        return {"error": str(exc)}


def main() -> None:
    """The console script."""
    app()


if __name__ == "__main__":
    main()

"""``peertrain peers ls | show | enroll-token | disable | rm``."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from .output import Col, JsonFlag, WideFlag, YesFlag, echo_json, fmt_time, key_values, table
from .shortids import PEER, resolve, short_ids, shown_id
from .state import state_of

__all__ = ["app"]

app = typer.Typer(help="Your peers: list, inspect, enroll, disable, remove.", no_args_is_help=True)
_STATUS_STYLE = {"active": "green", "stale": "yellow", "offline": "red"}


def _memory(specs: Any) -> str:
    if not isinstance(specs, dict):
        return "-"
    gpus = [g for g in specs.get("gpus") or [] if isinstance(g, dict)]
    if specs.get("device") == "cuda" and gpus:
        return f"{max(float(g.get('memory_gb') or 0) for g in gpus):.1f}"
    ram = specs.get("ram_gb")
    return f"{float(ram):.1f}" if isinstance(ram, int | float) else "-"


def peer_row(peer: dict[str, Any], shown: str | None = None) -> list[Any]:
    """One peer as a table row (its id as ``shown`` when given)."""
    specs = peer.get("specs") if isinstance(peer.get("specs"), dict) else {}
    status = str(peer.get("status") or "-")
    if peer.get("disabled"):
        status += " (disabled)"
    return [
        shown or PEER.id_of(peer) or "-",
        peer.get("name") or "-",
        Text(status, style=_STATUS_STYLE.get(str(peer.get("status")), "")),
        (specs or {}).get("device") or "-",
        _memory(specs),
        fmt_time(peer.get("last_seen")),
        "yes" if peer.get("shared") else "no",
    ]


@app.command("ls")
def list_peers(
    ctx: typer.Context,
    status: Annotated[str | None, typer.Option(help="active, stale or offline")] = None,
    device: Annotated[str | None, typer.Option(help="cpu, cuda or mps")] = None,
    mine: Annotated[bool, typer.Option("--mine", help="Only peers you own.")] = False,
    wide: WideFlag = False,
    json_out: JsonFlag = False,
) -> None:
    """Peers you may use, with their liveness and device."""
    state = state_of(ctx)
    with state.client() as pt:
        found = pt.list_peers(status=status, device=device, owner="me" if mine else None)
    if json_out:
        echo_json(found)
        return
    short = short_ids(PEER.id_of(p) for p in found)
    rows = [peer_row(p, shown_id(PEER.id_of(p), short, wide)) for p in found]
    columns: list[str | Col] = [
        "PEER",
        Col("NAME", flex=True),
        "STATUS",
        "DEVICE",
        "MEMORY GB",
        Col("LAST SEEN", wide=True),
        Col("SHARED", wide=True),
    ]
    table(state.out, columns, rows, empty="no peers yet", wide=wide)


@app.command("show")
def show_peer(ctx: typer.Context, peer_id: str, json_out: JsonFlag = False) -> None:
    """One peer."""
    state = state_of(ctx)
    with state.client() as pt:
        peer = pt.get_peer(resolve(pt, PEER, peer_id))
    if json_out:
        echo_json(peer)
        return
    key_values(state.out, peer, skip=("specs",))
    specs = peer.get("specs")
    if isinstance(specs, dict):
        state.out.print()
        key_values(state.out, specs)


@app.command("enroll-token")
def enroll_token(
    ctx: typer.Context,
    ttl: Annotated[
        int | None, typer.Option(min=60, help="Lifetime in seconds (default: one hour)")
    ] = None,
    json_out: JsonFlag = False,
) -> None:
    """A one-time token for `peertrain-peer enroll --token TOKEN` on a new machine."""
    state = state_of(ctx)
    with state.client() as pt:
        created = pt.create_enrollment(ttl)
    if json_out:
        echo_json(created)
        return
    typer.echo(created.get("enrollment_token", ""))
    state.err.print(f"expires at {fmt_time(created.get('expires_at'))}; it is shown only once")


@app.command("disable")
def disable(
    ctx: typer.Context,
    peer_id: str,
    enable: Annotated[bool, typer.Option("--enable", help="Enable it again instead.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Stop a peer of yours from being picked for jobs (it stays enrolled)."""
    state = state_of(ctx)
    with state.client() as pt:
        peer_id = resolve(pt, PEER, peer_id)
        peer = pt.update_peer(peer_id, disabled=not enable)
    if json_out:
        echo_json(peer)
        return
    state.err.print(f"{'enabled' if enable else 'disabled'} peer {peer_id}")


@app.command("rm")
def remove(
    ctx: typer.Context,
    peer_id: str,
    yes: YesFlag = False,
    json_out: JsonFlag = False,
) -> None:
    """Remove a peer of yours for good: its broker access ends at once (enroll it again
    with a new token to bring it back)."""
    state = state_of(ctx)
    with state.client() as pt:
        peer_id = resolve(pt, PEER, peer_id)
        if not yes:
            typer.confirm(f"remove peer {peer_id} for good?", abort=True, err=True)
        pt.remove_peer(peer_id)
    if json_out:
        echo_json({"peer_id": peer_id, "removed": True})
    else:
        state.err.print(f"removed peer {peer_id}")

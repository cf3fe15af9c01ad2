"""``register``, ``login``, ``logout``, ``whoami``."""

from __future__ import annotations

from typing import Annotated

import typer

from peertrain.client.config import remember_api_url
from peertrain.client.errors import ClientError

from .output import JsonFlag, echo_json, key_values
from .state import state_of

__all__ = ["install"]

Username = Annotated[str, typer.Option("--username", "-u", prompt=True, help="Your user name.")]


def register(
    ctx: typer.Context,
    username: Username,
    password: Annotated[
        str,
        typer.Option(
            prompt=True,
            hide_input=True,
            confirmation_prompt=True,
            envvar="PEERTRAIN_PASSWORD",
            help="At least 12 characters.",
        ),
    ],
    json_out: JsonFlag = False,
) -> None:
    """Create an account (then `peertrain login`)."""
    state = state_of(ctx)
    with state.client() as pt:
        user = pt.register(username, password)
    if json_out:
        echo_json(user)
    else:
        state.err.print(f"registered [bold]{user.get('username', username)}[/bold]")
        typer.echo(user.get("id", ""))


def login(
    ctx: typer.Context,
    username: Username,
    password: Annotated[
        str, typer.Option(prompt=True, hide_input=True, envvar="PEERTRAIN_PASSWORD")
    ],
    json_out: JsonFlag = False,
) -> None:
    """Log in; the tokens are saved (mode 0600) and renewed as they expire. The API
    becomes the one later commands (and the SDK's ``Client()``) use when given none."""
    state = state_of(ctx)
    with state.client() as pt:
        pt.login(username, password)
    remember_api_url(state.api, state.config_dir)
    where = state.token_store().path
    if json_out:
        echo_json({"username": username, "api": state.api, "credentials": str(where)})
        return
    state.err.print(f"logged in as [bold]{username}[/bold] at {state.api} (credentials: {where})")


def logout(ctx: typer.Context, json_out: JsonFlag = False) -> None:
    """End the session and forget the saved tokens."""
    state = state_of(ctx)
    told: bool | None = None
    note = "not logged in"
    with state.client() as pt:
        if pt.tokens is not None:
            try:
                pt.logout()
                told, note = True, "logged out"
            except ClientError as exc:  # the tokens are forgotten all the same
                told, note = False, f"logged out here; the server was not told: {exc}"
    if json_out:
        echo_json({"logged_out": told is not None, "server_told": bool(told)})
    else:
        state.err.print(note)


def whoami(ctx: typer.Context, json_out: JsonFlag = False) -> None:
    """The logged-in user."""
    state = state_of(ctx)
    with state.client() as pt:
        user = pt.me()
    if json_out:
        echo_json(user)
    else:
        key_values(state.out, user)


def install(app: typer.Typer) -> None:
    """Add the account commands to the root command."""
    app.command()(register)
    app.command()(login)
    app.command()(logout)
    app.command()(whoami)

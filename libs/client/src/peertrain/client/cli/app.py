"""The ``peertrain`` command: global options, sub-commands, and one place for errors.

Errors leave as one line on stderr: exit 1 for every failure, 2 for usage errors
(click's own, as one line too, not a usage text in a box), never a traceback unless
``--debug``. An API error's line says what its
``detail`` says (which field, which peer, why); a command that has no credentials for
the API first checks that the API answers at all, so a wrong ``--api`` says "cannot
reach", not "not logged in".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.core import Context as ClickContext  # typer vendors click (0.29+)
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from peertrain.client.base import API_ENV, DEFAULT_API, resolve_api_url
from peertrain.client.errors import ApiUnreachable, ClientError, NotLoggedIn
from peertrain.client.tokens import CONFIG_DIR_ENV, default_config_dir

from . import account, datasets, jobs, models, peers
from .predict import convert, predict
from .shortids import JOB, resolving
from .simulate import simulate
from .state import CliState, client_version

__all__ = ["app", "main", "usage_line"]


class _Group(TyperGroup):
    """Turns any error a command raises into one line and an exit status."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """As click's, but a usage error is one line, not a usage text and a box."""
        run = partial(
            super().main,
            args,
            prog_name,
            complete_var,
            standalone_mode=False,
            windows_expand_args=windows_expand_args,
            **extra,
        )
        if not standalone_mode:
            return run()
        try:
            code = run()
        except NoArgsIsHelpError as exc:  # typer printed the help already
            sys.exit(exc.exit_code)
        except ClickException as exc:
            typer.echo(f"peertrain: error: {usage_line(exc)}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("peertrain: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: ClickContext) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, ClickException):
            raise
        except NotLoggedIn as exc:
            _fail(ctx, _unreachable_or(ctx, exc), "")
        except ClientError as exc:
            _fail(ctx, exc, str(exc))
        except KeyboardInterrupt:
            typer.echo("peertrain: interrupted", err=True)
            raise typer.Exit(130) from None
        except BrokenPipeError:
            # the reader went away (``| head``): stop quietly, as Unix tools do (and as
            # rich does for tables: exit 1), with stdout on /dev/null so that flushing
            # it at exit does not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(1) from None
        except Exception as exc:
            _fail(ctx, exc, f"unexpected error: {type(exc).__name__}: {exc} (--debug shows more)")


def usage_line(exc: ClickException) -> str:
    """A click error as one line: what is wrong, and where to look for help."""
    line = " ".join(exc.format_message().split())
    ctx = exc.ctx if isinstance(exc, UsageError) else None
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        stop = "" if line.endswith((".", "?", "!")) else "."
        line += f"{stop} Try '{ctx.command_path} {max(ctx.help_option_names, key=len)}'."
    return line


def _fail(ctx: ClickContext, exc: Exception, line: str) -> None:
    state = ctx.find_object(CliState)
    if state is not None and state.debug:
        raise exc
    typer.echo(f"peertrain: error: {line or exc}", err=True)
    raise typer.Exit(1) from None


def _unreachable_or(ctx: ClickContext, exc: NotLoggedIn) -> ClientError:
    """``exc``, unless the API does not answer at all: then that is the news."""
    state = ctx.find_object(CliState)
    if state is None:
        return exc
    try:
        with state.client() as pt:
            pt.check_reachable()
    except ApiUnreachable as unreachable:
        return unreachable
    except ClientError:
        pass
    return exc


def _version(value: bool) -> None:
    if value:
        typer.echo(f"peertrain {client_version()}")
        raise typer.Exit()


app = typer.Typer(
    cls=_Group,
    name="peertrain",
    help="Train models across your peers with PeerTrain.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(peers.app, name="peers")
app.add_typer(datasets.app, name="dataset")
app.add_typer(jobs.app, name="job")
# models.py resolves no short ids itself: each of its commands' JOB_ID is resolved here.
for _info in models.app.registered_commands:
    if _info.callback is not None:
        _info.callback = resolving(_info.callback, job_id=JOB)
app.add_typer(models.app, name="model")
account.install(app)
app.command("simulate")(simulate)
app.command("predict")(predict)
app.command("convert")(convert)


@app.callback()
def root(
    ctx: typer.Context,
    api: Annotated[
        str | None,
        typer.Option("--api", envvar=API_ENV, help=f"API base URL (default: {DEFAULT_API})"),
    ] = None,
    config_dir: Annotated[
        Path | None,
        typer.Option(
            "--config-dir",
            envvar=CONFIG_DIR_ENV,
            help="Where credentials are kept (default: ~/.config/peertrain)",
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Global options."""
    state = ctx.obj if isinstance(ctx.obj, CliState) else CliState()
    state.config_dir = config_dir or default_config_dir()
    state.api = resolve_api_url(api, state.config_dir)  # the folder's saved API
    state.debug = debug
    ctx.obj = state


def main() -> None:
    """Entry point of the ``peertrain`` script."""
    app()

"""``peertrain job ...``: create (or check), rerun, follow, inspect, cancel, export jobs."""

from __future__ import annotations

import typer

from . import jobcreate, jobfollow, jobviews
from .mlflow_export import export_job

__all__ = ["EXIT_CANCELLED", "EXIT_FAILED", "app"]

EXIT_FAILED = jobfollow.EXIT_FAILED
EXIT_CANCELLED = jobfollow.EXIT_CANCELLED

app = typer.Typer(
    help="Training jobs: create, follow, inspect, rerun, cancel, export.", no_args_is_help=True
)
app.command("create")(jobcreate.create)
app.command("rerun")(jobcreate.rerun)
app.command("schema")(jobcreate.schema)
app.command("ls")(jobviews.list_jobs)
app.command("show")(jobviews.show_job)
app.command("watch")(jobfollow.watch)
app.command("logs")(jobfollow.logs)
app.command("metrics")(jobviews.metrics)
app.command("config")(jobviews.config)
app.command("events")(jobviews.events)
app.command("cancel")(jobviews.cancel)
app.command("export")(export_job)

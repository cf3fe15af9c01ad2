"""The command line without a platform: clear refusals, status from the files."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from peertrain.peer.__main__ import app
from peertrain.peer.files import IDENTITY_FILE, STATUS_FILE, write_json
from peertrain.peer.identity import Identity
from peertrain.peer.status import StatusReporter

runner = CliRunner()


def test_run_and_status_refuse_when_not_enrolled(tmp_path: Path) -> None:
    for command in ("run", "status"):
        result = runner.invoke(app, [command, "--config-dir", str(tmp_path)])
        assert result.exit_code == 2, result.output
        assert "not enrolled" in result.output


def test_enroll_against_an_unreachable_platform_fails_cleanly(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["enroll", "--api", "http://127.0.0.1:9", "--token", "x", "--config-dir", str(tmp_path)],
    )
    assert result.exit_code == 1 and "cannot reach" in result.output
    assert not (tmp_path / IDENTITY_FILE).exists()


def test_status_reads_identity_and_the_runtime_file(tmp_path: Path) -> None:
    identity = Identity(
        api="http://127.0.0.1:8080",
        peer_id="p1",
        peer_secret="s",
        owner_id="u1",
        name="box",
        enrolled_at=datetime.now(UTC),
    )
    write_json(tmp_path, IDENTITY_FILE, identity.model_dump(mode="json"))
    reporter = StatusReporter(tmp_path, "session")
    reporter.update(state="connected", heartbeats_sent=3, last_heartbeat_at=datetime.now(UTC))
    result = runner.invoke(app, ["status", "--json", "--config-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert '"peer_id": "p1"' in result.output and '"state": "connected"' in result.output
    assert '"running": true' in result.output and f'"pid": {os.getpid()}' in result.output
    # a counter that moves with every message is written with the next update, not each time
    reporter.note(tasks_received=5)
    assert '"tasks_received": 0' in (tmp_path / STATUS_FILE).read_text()
    reporter.update(state="stopped")
    assert '"tasks_received": 5' in (tmp_path / STATUS_FILE).read_text()
    result = runner.invoke(app, ["status", "--json", "--config-dir", str(tmp_path)])
    assert '"running": false' in result.output

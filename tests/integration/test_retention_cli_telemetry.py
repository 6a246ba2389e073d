"""`cli_telemetry`: the command line's retention spans and counters go where the user's
OpenTelemetry is configured, in a real process: under `opentelemetry-instrument` (its global
SDK), or by the standard `OTEL_*` variables alone; and nowhere, quietly, when nothing is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from langgraph.checkpoint.otel import names

APPLY = """
from pathlib import Path
from langgraph.checkpoint.otel.retention.telemetry import cli_telemetry

with cli_telemetry(None) as telemetry:
    with telemetry.apply(
        policy="keep_last=2", threads=1, saver="SqliteSaver", archive=Path("/x/a.archive")
    ) as report:
        with report.thread("t-1") as thread:
            thread.applied(
                checkpoints_removed=3, writes_removed=1, bytes_reclaimed=4242, checkpoints_kept=2
            )
print("APPLIED")
"""


def run(tmp_path: Path, command: list[str], **env: str) -> str:
    script = tmp_path / "apply.py"
    script.write_text(APPLY)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [*command, str(script)],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "APPLIED" in done.stdout
    return done.stdout


def test_under_opentelemetry_instrument_the_global_sdk_exports_them(tmp_path: Path) -> None:
    instrument = str(Path(sys.executable).parent / "opentelemetry-instrument")
    out = run(
        tmp_path,
        [instrument, "--traces_exporter", "console", "--metrics_exporter", "none", sys.executable],
        OTEL_SERVICE_NAME="nightly-retention",
    )
    assert f'"name": "{names.SPAN_RETENTION_APPLY}"' in out
    assert f'"name": "{names.SPAN_RETENTION_THREAD}"' in out
    assert f'"{names.RETENTION_BYTES_RECLAIMED}": 4242' in out
    assert '"service.name": "nightly-retention"' in out


def test_the_otel_variables_alone_set_up_exporters(tmp_path: Path) -> None:
    out = run(
        tmp_path,
        [sys.executable],
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="console",
    )
    assert f'"name": "{names.SPAN_RETENTION_APPLY}"' in out
    assert '"service.name": "langgraph-otel"' in out  # no OTEL_SERVICE_NAME given
    assert f'"name": "{names.METRIC_RETENTION_BYTES_RECLAIMED}"' in out  # flushed at the end
    assert '"value": 4242' in out


def test_nothing_configured_exports_nothing(tmp_path: Path) -> None:
    out = run(tmp_path, [sys.executable])
    assert out.strip() == "APPLIED"

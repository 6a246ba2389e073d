"""A real Arize Phoenix server (``phoenix serve``) for the tests, from ``.venv-phoenix``.

`PhoenixServer` starts ``phoenix serve`` as a subprocess of its own venv (installed by
``scripts/tools/phoenix.sh``, never into the project's ``.venv``) on free ports of 127.0.0.1,
with a temporary working directory (its SQLite database), and stops it afterwards. Phoenix
receives OTLP over HTTP at ``{url}/v1/traces`` (and over gRPC on ``grpc_port``) and serves its
UI and its REST API (``{url}/v1/projects/...``) on the same HTTP port.

Nothing leaves the machine: ``PHOENIX_TELEMETRY_ENABLED=false`` (its FullStory and Scarf.sh
pixels) and ``PHOENIX_ALLOW_EXTERNAL_RESOURCES=false`` (web fonts, the WASM sandbox download,
the agent assistant's web access); no authentication, no fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from helpers import ServerProcess, _free_port
from suite_paths import REPO

VENV = Path(os.environ.get("PHOENIX_VENV", REPO / ".venv-phoenix"))
PROJECT = "default"
"""The project Phoenix files spans under when their resource names none
(``openinference.project.name``)."""


class PhoenixUnavailable(RuntimeError):
    """``phoenix`` is not installed in .venv-phoenix (run ``bash scripts/tools/phoenix.sh``)."""


def find_phoenix() -> Path:
    """The ``phoenix`` command of .venv-phoenix (or of ``$PHOENIX_VENV``)."""
    binary = VENV / "bin" / "phoenix"
    if not binary.is_file():
        raise PhoenixUnavailable(
            f"{binary} not found: run 'bash scripts/tools/phoenix.sh' (or 'make tools')"
        )
    return binary


class PhoenixServer(ServerProcess):
    """``phoenix serve`` on 127.0.0.1, free HTTP and gRPC ports, a temporary working dir."""

    def __init__(self) -> None:
        self.binary = find_phoenix()
        self.root = Path(tempfile.mkdtemp(prefix="lgotel-phoenix-"))
        self.logfile = self.root / "phoenix.log"
        self.port = 0
        self.grpc_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s = 0.0

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env.update(
            PHOENIX_WORKING_DIR=str(self.root / "data"),
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.port),
            PHOENIX_GRPC_PORT=str(self.grpc_port),
            PHOENIX_TELEMETRY_ENABLED="false",
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
            PHOENIX_DISABLE_AGENT_ASSISTANT="true",
            PHOENIX_AGENTS_DISABLE_BASH="true",
            PHOENIX_ENABLE_AUTH="false",
        )
        return env

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def start(self, timeout: float = 90) -> None:
        began = time.monotonic()
        last_error = ""
        for _attempt in range(3):  # a free port may be taken between probe and bind
            self.port, self.grpc_port = _free_port(), _free_port()
            with open(self.logfile, "ab") as log:
                self.proc = subprocess.Popen(
                    [str(self.binary), "serve"],
                    cwd=self.root,
                    env=self.environment(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self.ready():
                    self.startup_s = time.monotonic() - began
                    return
                time.sleep(0.1)
            last_error = (
                f"phoenix serve exited with code {self.proc.returncode}"
                if self.proc.poll() is not None
                else f"phoenix serve was not ready within {timeout}s"
            ) + f"\n{self._log_tail()}"
            self._kill()
        raise RuntimeError(f"could not start Phoenix: {last_error}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def otlp_traces_endpoint(self) -> str:
        """Where an OTLP/HTTP span exporter sends (``OTLPSpanExporter(endpoint=...)``)."""
        return f"{self.url}/v1/traces"

    def get(self, path: str, **query: Any) -> Any:
        """GET ``{url}{path}`` of Phoenix's REST API with `query` (lists repeat the key): the
        decoded JSON body."""
        params = urllib.parse.urlencode(
            [
                (k, str(item))
                for k, v in query.items()
                if v is not None
                for item in (v if isinstance(v, list) else [v])
            ]
        )
        url = f"{self.url}{path}" + (f"?{params}" if params else "")
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read())

    def paged(self, path: str, **query: Any) -> list[dict[str, Any]]:
        """Every item of a paged REST listing (``data`` + ``next_cursor``)."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            body = self.get(path, cursor=cursor, limit=1000, **query)
            items.extend(body["data"])
            cursor = body.get("next_cursor")
            if not cursor:
                return items

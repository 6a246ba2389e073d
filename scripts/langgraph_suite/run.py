"""Run LangGraph's own test suite with every checkpointer fixture wrapped by `instrument()`.

    .venv/bin/python scripts/langgraph_suite/run.py [--bare all] [--files F ...] [-- PYTEST_ARGS]

1. Downloads the ``langgraph`` sdist of the installed version from the package index (cached
   in ``.langgraph-suite/``, ignored by git) and extracts its ``tests/`` and ``pyproject.toml``
   (the suite's pytest settings). The installed langgraph is what runs, not the sdist's copy.
2. Starts the servers the suite's conftest expects, the way its compose files define them:
   PostgreSQL on localhost:5442 (user/password/database ``postgres``; initdb + pg_ctl in a
   temporary directory) and Redis on localhost:6379 (``scripts/tools/redis.sh``), with
   ``NO_DOCKER=false``; both are stopped on exit. Without them the Postgres/Redis fixtures are
   not parametrized (``NO_DOCKER=true``), which fails the run when ``CI=true``.
3. Runs the selected test files wrapped (``plugin.py``), re-runs the wrapped failures bare and
   re-runs the ones that pass bare wrapped once more. A test that fails (or errors) wrapped
   twice and passes bare is a wrapped-only failure and fails the run. ``--bare all`` runs the
   whole selection bare as well and compares every test id.

Only one run at a time per machine (the ports are fixed): a second run waits for the first.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.metadata
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".langgraph-suite"
PYTHON = sys.executable

PG_PORT = 5442  # tests/compose-postgres.yml: "5442:5432", postgres:postgres@localhost/postgres
REDIS_PORT = 6379  # tests/compose-redis.yml: "6379:6379"

# The files whose tests use the checkpointer fixtures (sync_checkpointer, async_checkpointer,
# the conftest_checkpointer factories): Pregel sync and async, time travel, interrupts,
# subgraph persistence, durability, delta channels, migrations, pruning.
DEFAULT_FILES = [
    "test_pregel.py",
    "test_pregel_async.py",
    "test_time_travel.py",
    "test_time_travel_async.py",
    "test_interruption.py",
    "test_interrupt_state.py",
    "test_strict_resume.py",
    "test_subgraph_persistence.py",
    "test_subgraph_persistence_async.py",
    "test_large_cases.py",
    "test_large_cases_async.py",
    "test_checkpoint_migration.py",
    "test_pydantic.py",
    "test_delta_channel_exit_mode.py",
    "test_delta_channel_fork.py",
    "test_delta_channel_parallel_order.py",
    "test_delta_channel_subgraph.py",
    "test_delta_channel_to_plain.py",
    "test_delta_channel_update_state.py",
    "test_prune_postgres.py",
]

# Backends that must have run (and passed at least once) under CI=true.
REQUIRED_BACKENDS = [
    "memory",
    "memory_migrate_sends",
    "sqlite",
    "sqlite_aes",
    "sqlite_aio",
    "postgres",
    "postgres_pipe",
    "postgres_pool",
    "postgres_aio",
    "postgres_aio_pipe",
    "postgres_aio_pool",
    "cache-redis",
]

FAILED = ("failed", "error")


def log(msg: str) -> None:
    print(f"[langgraph-suite] {msg}", flush=True)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


# -- the suite ----------------------------------------------------------------------------------


def fetch_suite() -> Path:
    """Download and extract the langgraph sdist's tests; return the extracted root."""
    version = importlib.metadata.version("langgraph")
    dest = CACHE / f"langgraph-{version}"
    if (dest / ".complete").exists():
        return dest
    dist = CACHE / "dist"
    sdist = dist / f"langgraph-{version}.tar.gz"
    if not sdist.exists():
        log(f"downloading the langgraph {version} sdist")
        subprocess.run(
            [PYTHON, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             "--dest", str(dist), f"langgraph=={version}"],
            check=True,
        )  # fmt: skip
    shutil.rmtree(dest, ignore_errors=True)
    top = f"langgraph-{version}/"
    with tarfile.open(sdist) as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.name.startswith(top + "tests/") or m.name == top + "pyproject.toml"
        ]
        for m in members:
            m.name = m.name.removeprefix(top)
        dest.mkdir(parents=True)
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: no links out, no devices
            tar.extractall(dest, members=members, filter="data")
        else:
            tar.extractall(dest, members=members)
    missing = [
        f for f in ("conftest.py", "conftest_checkpointer.py") if not (dest / "tests" / f).exists()
    ]
    if missing:
        raise SystemExit(
            f"the langgraph {version} sdist has no tests/{', tests/'.join(missing)}: its test "
            "suite must be found elsewhere"
        )
    (dest / ".complete").touch()
    return dest


# -- servers ------------------------------------------------------------------------------------


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout:.0f}s")
        time.sleep(0.2)


@contextlib.contextmanager
def postgres(port: int) -> Iterator[None]:
    """A throw-away PostgreSQL cluster on localhost:`port` with password auth over TCP."""
    bindirs = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not bindirs:
        raise RuntimeError("no /usr/lib/postgresql/*/bin/initdb (run `make postgres-server`)")
    bindir = bindirs[-1].parent
    if port_in_use(port):
        raise RuntimeError(f"port {port} is already in use")
    as_root = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="lgsuite-pg-", dir="/tmp"))

    def run(*args: str) -> None:
        cmd = [str(bindir / args[0]), *args[1:]]
        if as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"}
        )
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")

    started = False
    try:
        (root / "pw").write_text("postgres\n")
        if as_root:
            pg = pwd.getpwnam("postgres")
            for path in (root, root / "pw"):
                os.chown(path, pg.pw_uid, pg.pw_gid)
        data = root / "data"
        run(
            "initdb", "-D", str(data), "-U", "postgres", f"--pwfile={root / 'pw'}",
            "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8",
            "--no-locale", "--no-sync",
        )  # fmt: skip
        with (data / "postgresql.auto.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = 'localhost'\nport = {port}\n"
                f"unix_socket_directories = '{root}'\nmax_connections = 300\n"
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
            )
        run("pg_ctl", "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60", "start")
        started = True
        log(f"PostgreSQL ({bindir.parent.name}) on localhost:{port}")
        yield
    finally:
        if started:
            with contextlib.suppress(Exception):
                run("pg_ctl", "-D", str(root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def redis(port: int) -> Iterator[None]:
    """redis-server on localhost:`port` (binary from scripts/tools/redis.sh), nothing saved."""
    out = subprocess.run(
        ["bash", str(ROOT / "scripts/tools/redis.sh")], capture_output=True, text=True
    )
    paths = [
        ln.split(":", 1)[1].strip()
        for ln in out.stdout.splitlines()
        if ln.startswith("redis-server:")
    ]
    if out.returncode or not paths:
        raise RuntimeError(f"scripts/tools/redis.sh failed:\n{out.stdout}{out.stderr}")
    if port_in_use(port):
        raise RuntimeError(f"port {port} is already in use")
    proc = subprocess.Popen(
        [paths[0], "--port", str(port), "--bind", "127.0.0.1", "-::1", "--save", "",
         "--appendonly", "no", "--maxmemory", "256mb", "--maxmemory-policy", "allkeys-lru"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    try:
        import redis as redis_client

        client = redis_client.Redis(host="localhost", port=port)
        wait_until(client.ping, 30, "redis-server")
        log(f"Redis ({client.info()['redis_version']}) on localhost:{port}")
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- pytest runs --------------------------------------------------------------------------------


class Run:
    """One pytest process over the suite; its results are read from the plugin's JSON."""

    def __init__(self, name: str, suite: Path, outdir: Path) -> None:
        self.name, self.suite, self.outdir = name, suite, outdir
        self.results: dict[str, dict[str, Any]] = {}
        self.collect_errors: dict[str, str] = {}
        self.wall = 0.0
        self.returncode = 0

    def __call__(
        self, targets: list[str], *, wrap: bool, no_docker: bool, workers: int, extra: list[str]
    ) -> Run:
        results = self.outdir / f"{self.name}.json"
        logfile = self.outdir / f"{self.name}.log"
        argsfile = self.outdir / f"{self.name}.args"
        argsfile.write_text("\n".join(targets) + "\n")
        cmd = ["nice", "-n", "10", PYTHON, "-m", "pytest"]
        cmd += ["-p", "langgraph_suite.plugin", "-p", "no:asyncio", "-p", "no:cacheprovider"]
        cmd += ["-p", "no:langgraph_checkpoint_otel", "-o", "addopts="]
        cmd += ["--strict-markers", "--snapshot-warn-unused", "-q", "--tb=short", "-rfE"]
        # xdist for whole files and long re-runs; a short re-run would mostly wait for workers
        if workers > 1 and (len(targets) > 20 or not any("::" in t for t in targets)):
            cmd += ["-n", str(workers), "--dist", "worksteal"]
        cmd += [*extra, f"@{argsfile}"]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (os.environ.get("PYTHONPATH"), str(ROOT / "scripts")) if p
            ),
            "NO_DOCKER": "true" if no_docker else "false",
            "LANGGRAPH_SUITE_WRAP": "1" if wrap else "0",
            "LANGGRAPH_SUITE_RESULTS": str(results),
        }
        mode = "wrapped" if wrap else "bare"
        log(f"{self.name}: {mode}, {len(targets)} target(s), log {logfile.relative_to(ROOT)}")
        start = time.monotonic()
        with logfile.open("w") as out:
            self.returncode = subprocess.run(
                cmd, cwd=self.suite, env=env, stdout=out, stderr=subprocess.STDOUT
            ).returncode
        self.wall = time.monotonic() - start
        if results.exists():
            data = json.loads(results.read_text())
            self.results, self.collect_errors = data["tests"], data["collect_errors"]
        tail = logfile.read_text(errors="replace").strip().splitlines()[-1:]
        log(f"{self.name}: {tail[0] if tail else '(no output)'} [{self.wall:.0f}s wall]")
        if self.returncode not in (0, 1) or self.collect_errors:
            raise SystemExit(
                f"{self.name}: pytest exited with {self.returncode}"
                f" ({len(self.collect_errors)} collection error(s)); see {logfile}"
            )
        return self

    def failed(self) -> list[str]:
        return [t for t, r in self.results.items() if r["outcome"] in FAILED]

    def outcome(self, test: str) -> str:
        return self.results.get(test, {}).get("outcome") or "not run"


def backends_of(result: dict[str, Any]) -> list[str]:
    """The test's backend params (checkpointer, cache-*), else the factories it used."""
    return result["backends"] or result["made"] or ["none"]


def group_by_function(ids: list[str]) -> dict[str, list[str]]:
    """`file::test_fn[params]` ids grouped by `file::test_fn`, params listed."""
    groups: dict[str, list[str]] = defaultdict(list)
    for test in ids:
        function, _, params = test.partition("[")
        groups[function].append(params.removesuffix("]"))
    return groups


def summarize(wrapped: Run, bare: Run | None, bare_all: bool) -> dict[str, list[str]]:
    """Print the comparison; return the failures by category (wrapped_only fails the run)."""
    tests = wrapped.results
    outcomes = Counter(r["outcome"] for r in tests.values())
    failed = wrapped.failed()
    cats: dict[str, list[str]] = {"fail_bare_too": [], "flaky": [], "wrapped_only": []}
    for test in failed:
        bare_outcome = bare.outcome(test) if bare else "not run"
        if bare_outcome in FAILED:
            cats["fail_bare_too"].append(test)
        elif bare_outcome == "passed":
            confirmed = tests[test].get("confirmed", tests[test]["outcome"])
            cats["wrapped_only" if confirmed in FAILED else "flaky"].append(test)
    log("")
    log(f"collected: {len(tests)}")
    for key in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
        log(f"  wrapped {key:>8}: {outcomes.get(key, 0)}")
    if bare is not None:
        if bare_all:
            bare_passed = sum(r["outcome"] == "passed" for r in bare.results.values())
            log(f"  bare     passed: {bare_passed} of {len(bare.results)}")
        else:
            log(f"  bare re-run of the {len(failed)} wrapped failure(s): "
                f"{sum(bare.outcome(t) == 'passed' for t in failed)} passed bare")  # fmt: skip
    log(f"  wrapped-only failures: {len(cats['wrapped_only'])}")
    spans = sum(r["spans"] for r in tests.values())
    n_wrapped = sum(r["wrapped"] for r in tests.values())
    log(f"  checkpointers wrapped: {n_wrapped}, spans exported: {spans}")
    log("")
    log("per backend (a test with a checkpointer and a cache counts in both rows;")
    log("time = sum of the tests' durations, not wall time):")
    header = f"  {'backend':<22}{'tests':>7}{'passed':>8}{'failed':>8}{'skipped':>8}"
    header += f"{'wr-only':>8}{'time':>8}" + (f"{'bare':>8}" if bare_all else "")
    log(header)
    by_backend: dict[str, list[str]] = defaultdict(list)
    for test, r in tests.items():
        for backend in backends_of(r):
            by_backend[backend].append(test)
    only = set(cats["wrapped_only"])
    for backend in sorted(by_backend):
        ids = by_backend[backend]
        count = Counter(tests[t]["outcome"] for t in ids)
        line = f"  {backend:<22}{len(ids):>7}{count['passed']:>8}"
        line += f"{count['failed'] + count['error']:>8}{count['skipped']:>8}"
        line += f"{len(only.intersection(ids)):>8}"
        line += f"{sum(tests[t]['duration'] for t in ids):>7.0f}s"
        if bare_all and bare is not None:
            line += f"{sum(bare.results.get(t, {}).get('duration', 0) for t in ids):>7.0f}s"
        log(line)
    log("")
    for cat, title in (
        ("fail_bare_too", "fail bare too (not the wrapper's)"),
        ("flaky", "failed wrapped once, then passed bare and wrapped (flaky)"),
        ("wrapped_only", "WRAPPED-ONLY FAILURES (pass bare, fail wrapped twice)"),
    ):
        if not cats[cat]:
            continue
        log(f"{title}: {len(cats[cat])}")
        for function, params in group_by_function(cats[cat]).items():
            first = function + (f"[{params[0]}]" if params[0] else "")
            failures = tests[first].get("failures", [])
            reason = failures[0]["message"].splitlines()[0][:200] if failures else ""
            log(f"  {function}  x{len(params)}: {reason}")
            if params[0]:
                log(f"      [{', '.join(params)}]")
    return cats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="+", default=DEFAULT_FILES, help="test files to run")
    parser.add_argument(
        "--bare",
        choices=["failures", "all"],
        default="failures",
        help="bare run of the wrapped failures only (default) or of the whole selection",
    )
    parser.add_argument("-n", "--workers", type=int, default=2, help="pytest-xdist workers")
    parser.add_argument("--no-servers", action="store_true", help="NO_DOCKER=true (not in CI)")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()

    # SIGTERM/SIGHUP end the run through the finally blocks that stop the servers.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: sys.exit(128 + signum))

    started = time.monotonic()
    CACHE.mkdir(exist_ok=True)
    with (CACHE / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another langgraph-suite run holds the ports: waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        suite = fetch_suite()
        targets = [f"tests/{f}" for f in args.files]
        outdir = CACHE / "runs"
        shutil.rmtree(outdir, ignore_errors=True)
        outdir.mkdir()
        with contextlib.ExitStack() as servers:
            no_docker = args.no_servers
            if no_docker and in_ci():
                log("ERROR: --no-servers is not allowed with CI=true")
                return 1
            if not no_docker:
                try:
                    servers.enter_context(postgres(PG_PORT))
                    servers.enter_context(redis(REDIS_PORT))
                except Exception as exc:
                    log(f"{'ERROR' if in_ci() else 'WARNING'}: could not start the servers: {exc}")
                    if in_ci():
                        return 1
                    log("WARNING: running without the Postgres/Redis fixtures (NO_DOCKER=true)")
                    servers.close()
                    no_docker = True
            common = {"no_docker": no_docker, "workers": args.workers, "extra": args.pytest_args}
            wrapped = Run("wrapped", suite, outdir)(targets, wrap=True, **common)
            runs = [wrapped]
            bare: Run | None = None
            if args.bare == "all":
                bare = Run("bare", suite, outdir)(targets, wrap=False, **common)
            elif wrapped.failed():
                bare = Run("bare-rerun", suite, outdir)(wrapped.failed(), wrap=False, **common)
            if bare is not None:
                runs.append(bare)
                candidates = [t for t in wrapped.failed() if bare.outcome(t) == "passed"]
                if candidates:
                    again = Run("wrapped-rerun", suite, outdir)(candidates, wrap=True, **common)
                    runs.append(again)
                    for test in candidates:
                        wrapped.results[test]["confirmed"] = again.outcome(test)
    cats = summarize(wrapped, bare, args.bare == "all")
    log("wall time: " + ", ".join(f"{r.name} {r.wall:.0f}s" for r in runs))
    status = 0
    if not any(r["wrapped"] for r in wrapped.results.values()):
        log("ERROR: no checkpointer was wrapped")
        status = 1
    if cats["wrapped_only"]:
        log(f"ERROR: {len(cats['wrapped_only'])} test(s) pass bare and fail wrapped")
        status = 1
    if in_ci():
        passed = Counter(
            b
            for r in wrapped.results.values()
            if r["outcome"] == "passed"
            for b in {*r["backends"], *r["made"]}
        )
        missing = [b for b in REQUIRED_BACKENDS if not passed[b]]
        if missing:
            log(f"ERROR (CI): no test passed on the fixture(s) {', '.join(missing)}")
            status = 1
    log(f"total wall time: {time.monotonic() - started:.0f}s; logs and results in {outdir}")
    return status


if __name__ == "__main__":
    sys.exit(main())

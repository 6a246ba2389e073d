"""Run the agent corpus and the transparency tests on the oldest and the newest LangGraph the
library supports, each in its own virtual environment.

    .venv/bin/python scripts/langgraph_versions/run.py [--env oldest|newest ...] [--refresh]
        [--tests FILE ...] [-- PYTEST_ARGS]

1. Creates or updates ``.venv-lg-oldest`` and ``.venv-lg-newest`` (ignored by git) beside
   ``.venv``, each with the project installed editable from this working tree (its sqlite,
   postgres, redis, otlp and inspector extras) and what the tests need
   (``requirements.txt`` here), under its constraint file: ``oldest.txt`` pins the oldest
   releases pyproject.toml declares (its lower bounds); ``newest.txt`` pins nothing, and the
   environment is installed with ``--upgrade``: the newest releases on the package index
   within the declared ranges.
2. Prints what each environment resolved (and keeps it in ``<venv>/resolved.json``).
3. Runs the selected tests in each, one environment after the other, with the real PostgreSQL
   and Redis servers the test fixtures start themselves. Under ``CI=true`` a skipped test is a
   failure (tests/conftest.py).

With ``--skip-same``, as ``make test`` runs it after the project suite: an environment that
resolved exactly the versions of the running ``.venv`` (every distribution in ``REPORTED``) has
its tests not run again, since that suite has just run them on those versions; it is said so.
Usually the newest one: ``.venv`` also resolves to the newest releases.

Quick when the environments exist: an environment is reinstalled only when pyproject.toml, its
constraint file or requirements.txt changed (a stamp in the venv holds their digest), and the
newest one also once a day (``NEWEST_MAX_AGE``) or with ``--refresh``, to pick up new releases.
Prints how long each part took; exits non-zero when an install or a test run fails.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
EXTRAS = "sqlite,postgres,redis,otlp,inspector"

TESTS = [
    "tests/integration/test_langgraph_internals.py",
    "tests/unit/test_saver_drift.py",
    "tests/integration/test_transparency.py",
    "tests/integration/test_agents.py",
    "tests/integration/test_agents_packaged.py",
    "tests/integration/test_cancelled_runs.py",
]
"""The default selection: LangGraph's internals the library reads (and their signatures, with
`BaseCheckpointSaver`'s, against what the wrapper delegates), the wrapper's transparency,
the agent corpus, the packaged agents (deepagents, langgraph-supervisor, langgraph-swarm) and
the attribution of a cancelled run's saves (it follows LangGraph's loop submissions)."""

REPORTED = [
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-prebuilt",
    "langchain-core",
    "langchain",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langgraph-checkpoint-redis",
    "deepagents",
    "langgraph-supervisor",
    "langgraph-swarm",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "pydantic",
]
"""Distributions whose resolved versions are printed."""

NEWEST_MAX_AGE = 24 * 3600
"""Seconds after which the newest environment resolves again (new releases)."""
STAMP = ".installed-langgraph-versions"


@dataclass
class Env:
    name: str
    constraints: Path
    upgrade: bool
    """Install with ``--upgrade --upgrade-strategy eager`` (the newest releases)."""
    deselect: str | None = None
    """A pytest ``-k`` expression of what this environment's packages cannot run (deselected,
    and said so in the output; combined with a ``-k`` given after ``--``)."""
    timings: dict[str, float] = field(default_factory=dict)
    resolved: dict[str, str] = field(default_factory=dict)
    result: str = "not run"

    @property
    def venv(self) -> Path:
        return ROOT / f".venv-lg-{self.name}"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


ENVS = {
    # deepagents >= 0.7.32 (the deep agent of the packaged corpus: its sub-agents' `task` tool,
    # its messages as a DeltaChannel) needs langchain-core >= 1.7; under langchain-core 1.4.7
    # pip resolves deepagents 0.6.11, whose graph the corpus cannot drive ("Subgraph tools not
    # found"). The supervisor and the swarm run there.
    "oldest": Env("oldest", HERE / "oldest.txt", upgrade=False, deselect="deep"),
    "newest": Env("newest", HERE / "newest.txt", upgrade=True),
}


def log(msg: str) -> None:
    print(f"[langgraph-versions] {msg}", flush=True)


def install_key(env: Env) -> str:
    """Digest of everything an install depends on: a change means reinstall."""
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    for path in (ROOT / "pyproject.toml", env.constraints, REQUIREMENTS):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def up_to_date(env: Env, refresh: bool) -> bool:
    stamp = env.venv / STAMP
    if refresh or not env.python.exists() or not stamp.exists():
        return False
    try:
        noted = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    if noted.get("key") != install_key(env):
        return False
    return not (env.upgrade and time.time() - float(noted.get("time", 0)) > NEWEST_MAX_AGE)


@contextlib.contextmanager
def timed(env: Env, part: str) -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        env.timings[part] = env.timings.get(part, 0.0) + time.monotonic() - started


def run(cmd: list[str]) -> None:
    """Run `cmd` in the project root; its output is shown only when it fails."""
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        print(proc.stdout + proc.stderr, file=sys.stderr, flush=True)
        raise subprocess.CalledProcessError(proc.returncode, cmd)


def ensure(env: Env, refresh: bool) -> None:
    """Create or update the environment (see the module docstring)."""
    if up_to_date(env, refresh):
        log(f"{env.name}: {env.venv.name} is up to date")
        return
    if not env.python.exists():
        with timed(env, "venv"):
            log(f"{env.name}: creating {env.venv.name} with Python {sys.version.split()[0]}")
            shutil.rmtree(env.venv, ignore_errors=True)
            run([sys.executable, "-m", "venv", str(env.venv)])
            run([str(env.python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    with timed(env, "install"):
        log(
            f"{env.name}: installing the project and the test requirements under "
            f"{env.constraints.relative_to(ROOT)}" + (" (--upgrade)" if env.upgrade else "")
        )
        (env.venv / STAMP).unlink(missing_ok=True)
        cmd = [str(env.python), "-m", "pip", "install", "--quiet"]
        if env.upgrade:
            cmd += ["--upgrade", "--upgrade-strategy", "eager"]
        cmd += ["-c", str(env.constraints), "-r", str(REQUIREMENTS), "-e", f"{ROOT}[{EXTRAS}]"]
        run(cmd)
        check = subprocess.run(
            [str(env.python), "-m", "pip", "check"], capture_output=True, text=True, cwd=ROOT
        )
        if check.returncode:
            log(f"{env.name}: WARNING: pip check reports conflicts:\n{check.stdout}{check.stderr}")
    (env.venv / STAMP).write_text(json.dumps({"key": install_key(env), "time": time.time()}))


RESOLVE = """
import importlib.metadata as m, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = m.version(name)
    except m.PackageNotFoundError:
        out[name] = "-"
print(json.dumps(out))
"""


def resolve(env: Env) -> None:
    proc = subprocess.run(
        [str(env.python), "-c", RESOLVE, *REPORTED],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    env.resolved = json.loads(proc.stdout)
    (env.venv / "resolved.json").write_text(json.dumps(env.resolved, indent=2) + "\n")
    width = max(map(len, env.resolved))
    lines = "\n".join(f"    {name:<{width}}  {version}" for name, version in env.resolved.items())
    log(f"{env.name}: resolved\n{lines}")


def same_as_running(env: Env) -> bool:
    """Whether `env` resolved every reported distribution as the running interpreter has it."""
    proc = subprocess.run(
        [sys.executable, "-c", RESOLVE, *REPORTED], capture_output=True, text=True, check=True
    )
    return bool(env.resolved) and env.resolved == json.loads(proc.stdout)


def test(env: Env, tests: list[str], pytest_args: list[str]) -> bool:
    args, keyword = _without_keyword(pytest_args)
    if env.deselect:
        log(f"{env.name}: deselected here (its packages cannot run them): -k {env.deselect!r}")
        keyword = f"not ({env.deselect})" + (f" and ({keyword})" if keyword else "")
    cmd = [str(env.python), "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", *args]
    if keyword:
        cmd += ["-k", keyword]
    log(f"{env.name}: {' '.join(cmd[1:])}")
    with timed(env, "tests"):
        code = subprocess.run(cmd, cwd=ROOT).returncode
    env.result = "passed" if code == 0 else f"FAILED (pytest exit {code})"
    return code == 0


def _without_keyword(pytest_args: list[str]) -> tuple[list[str], str | None]:
    """`pytest_args` without its ``-k`` expression (pytest keeps only the last one), and the
    expression."""
    args: list[str] = []
    keyword: str | None = None
    items = iter(pytest_args)
    for arg in items:
        if arg == "-k":
            keyword = next(items, "")
        elif arg.startswith("-k"):
            keyword = arg[2:]
        else:
            args.append(arg)
    return args, keyword


def summary(envs: list[Env]) -> None:
    log("summary (seconds)")
    print(f"    {'env':<8} {'langgraph':<10} {'venv':>6} {'install':>8} {'tests':>7}  result")
    for env in envs:
        t = env.timings
        cells = [f"{t[p]:.1f}" if p in t else "-" for p in ("venv", "install", "tests")]
        print(
            f"    {env.name:<8} {env.resolved.get('langgraph', '?'):<10} {cells[0]:>6} "
            f"{cells[1]:>8} {cells[2]:>7}  {env.result}",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--env", nargs="+", choices=list(ENVS), default=list(ENVS), help="environments to run"
    )
    parser.add_argument("--tests", nargs="+", default=TESTS, help="test files to run")
    parser.add_argument(
        "--refresh", action="store_true", help="reinstall even when the stamp is current"
    )
    parser.add_argument(
        "--skip-same",
        action="store_true",
        help="do not run the tests again in an environment that resolved what .venv has",
    )
    parser.add_argument(
        "--install-only", action="store_true", help="create/update the environments only"
    )
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()

    envs = [ENVS[name] for name in args.env]
    ok = True
    for env in envs:
        env.venv.mkdir(exist_ok=True)
        with (env.venv / ".lock").open("w") as lock:
            if not _try_lock(lock):
                log(f"{env.name}: another run holds {env.venv.name}: waiting for it")
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                ensure(env, args.refresh)
            except subprocess.CalledProcessError as exc:
                env.result = f"INSTALL FAILED ({exc.returncode})"
                log(f"{env.name}: ERROR: {' '.join(map(str, exc.cmd))} exited {exc.returncode}")
                ok = False
                continue
            resolve(env)
            if args.skip_same and same_as_running(env):
                env.result = f"same versions as {Path(sys.prefix).name}: its suite ran them"
                log(f"{env.name}: resolved the versions of {sys.prefix}, whose suite has run "
                    "these tests: not run again")  # fmt: skip
            elif not args.install_only:
                ok = test(env, args.tests, args.pytest_args) and ok
    summary(envs)
    return 0 if ok else 1


def _try_lock(lock: IO[str]) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())

"""Install as a user does: each route README's "Install into your app" gives (pip from the
clone; `make wheel`, then pip from the wheel) into a fresh venv (`python -m venv`, with the pip it
comes with, the dependencies from the package index), then the README's own snippets run there:
the five lines of "Five lines in your app" on a real SQLite file with the SDK's in-memory
exporter, and its zero-code command (`opentelemetry-instrument`, the Instrumentor found by its
entry point) exporting OTLP to a real receiver; and `langgraph-otel` from the wheel installed with
`[sqlite,inspector]` alone reads the thread. Commands and code are read from README.md, so the
README and this test cannot drift. Each venv costs about 15 s of CPU (pip resolving and
installing ~60 packages); the three are made at once. `make test` runs this module once (the
LangGraph versions matrix does not select it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from langgraph.checkpoint.otel import names
from otlp_receiver import OTLPReceiver, attrs
from suite_paths import REPO as ROOT

README = (ROOT / "README.md").read_text()
CLONE = "/path/to/langgraph-checkpoint-otel"  # what README writes for the user's clone
EXTRAS_NOT_FOR_USERS = {"dev", "bench", "langgraph-suite"}

# What the five lines leave to the app (`builder`, `inputs`), and the SDK the app would set up.
PRELUDE = """
import operator
from typing import Annotated, TypedDict
from langgraph.graph import START, StateGraph

class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]

builder = StateGraph(State)
builder.add_node("plan", lambda state: {"log": ["plan"]})
builder.add_node("act", lambda state: {"log": ["act"]})
builder.add_edge(START, "plan")
builder.add_edge("plan", "act")
inputs = {"log": ["input"]}
"""
SDK = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
"""
REPORT = """
import json, langgraph.checkpoint.otel as otel
print(json.dumps({"module": otel.__file__, "spans": [
    {"name": s.name, "trace": s.context.trace_id, "id": s.context.span_id,
     "parent": s.parent.span_id if s.parent else None}
    for s in exporter.get_finished_spans()]}))
"""


def section(heading: str) -> str:
    """README's text under `heading`, up to the next `## `."""
    start = README.index(f"\n{heading}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def commands(text: str) -> list[list[str]]:
    """The shell commands of the ```sh blocks of `text`, split as the shell would (comments
    dropped, backslash continuations joined)."""
    lines = "\n".join(blocks(text, "sh")).replace("\\\n", " ").splitlines()
    return [words for line in lines if (words := shlex.split(line, comments=True))]


INSTALL = commands(section("## Install into your app"))
PIP_INSTALLS = [c for c in INSTALL if c[:2] == ["pip", "install"]]
FIVE_LINES = blocks(section("## Five lines in your app"), "python")
RUN_SPAN = names.run_span_name("LangGraph")  # the graph has no name of its own
[THREAD] = re.findall(r'"thread_id": "([^"]+)"', "".join(FIVE_LINES))
ZERO_CODE = [c for c in commands(section("## Five lines in your app")) if "python" in c]


def user_env(venv: Path) -> dict[str, str]:
    """The environment of a shell with `venv` activated: nothing of this checkout's venv."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{shlex.join(args)}\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
    return done.stdout


def fresh_venv_with(tmp: Path, install: list[str]) -> Path:
    """A new venv in `tmp`, then `install` (README's `pip install ...`) run by its own pip."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    assert install[:2] == ["pip", "install"]
    run([str(venv / "bin" / "python"), "-m", *install], tmp, user_env(venv))
    return venv


def install_from_clone(tmp: Path) -> Path:
    """README's install from a clone, with this checkout as the clone."""
    [install] = [c for c in PIP_INSTALLS if c[2].startswith(f"{CLONE}[")]
    return fresh_venv_with(tmp, [*install[:2], install[2].replace(CLONE, str(ROOT), 1)])


def make_wheel(tmp: Path) -> tuple[Path, list[str]]:
    """README's `make wheel` (into a temporary WHEEL_DIR instead of the checkout's dist/): the
    wheel, and README's `pip install` of the wheel it names, naming the one built."""
    assert ["make", "wheel"] in INSTALL
    [install] = [c for c in PIP_INSTALLS if ".whl[" in c[2]]
    named = install[2].split("[", 1)[0]
    assert named.startswith(f"{CLONE}/dist/")
    # `-o venv`: the test runs inside .venv, which `make test` has just set up; a stamp made stale
    # by an edit in a shared checkout must not reinstall it from inside a test
    out = run(
        ["make", "--no-print-directory", "-o", "venv", "wheel", f"WHEEL_DIR={tmp}"],
        ROOT,
        dict(os.environ),
    )
    [wheel] = tmp.glob("*.whl")
    assert wheel.name == Path(named).name, "README names another wheel than `make wheel` builds"
    assert str(wheel) in out
    return wheel, [*install[:2], install[2].replace(named, str(wheel), 1)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each route in its own venv, at once (pip processes wait on the index for part of their
    time): README's clone and wheel routes, and the wheel with the inspector's extra instead of
    `[otlp]` (the inspector must not need the app's SDK extra)."""
    wheel, from_wheel = make_wheel(tmp_path_factory.mktemp("dist"))
    inspector = [*from_wheel[:2], f"{wheel}[sqlite,inspector]"]
    with ThreadPoolExecutor(3) as pool:
        routes = {
            "from_clone": pool.submit(install_from_clone, tmp_path_factory.mktemp("from-clone")),
            "from_wheel": pool.submit(
                fresh_venv_with, tmp_path_factory.mktemp("from-wheel"), from_wheel
            ),
            "inspector": pool.submit(
                fresh_venv_with, tmp_path_factory.mktemp("inspector"), inspector
            ),
        }
        return {route: future.result() for route, future in routes.items()}


def test_the_readme_gives_both_routes_and_the_extras_pyproject_defines() -> None:
    assert len(PIP_INSTALLS) == 2
    assert "not on the package index" in section("## Install into your app")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    documented = set(
        re.findall(r"^\| `\[([\w-]+)\]` \|", section("## Install into your app"), re.M)
    )
    assert documented == set(extras) - EXTRAS_NOT_FOR_USERS
    for install in PIP_INSTALLS:
        named = set(install[2].rsplit("[", 1)[1].rstrip("]").split(","))
        assert named <= documented


def five_lines_in(venv: Path, cwd: Path) -> tuple[str, list[dict[str, int | str | None]]]:
    """README's five lines run in `venv` (after PRELUDE and an SDK with an in-memory exporter):
    the package's file and the spans that came out."""
    [code] = FIVE_LINES
    cwd.mkdir()
    out = run(
        [str(venv / "bin" / "python"), "-c", PRELUDE + SDK + code + REPORT], cwd, user_env(venv)
    )
    report = json.loads(out.strip().splitlines()[-1])
    return report["module"], report["spans"]


@pytest.mark.parametrize("route", ["from_clone", "from_wheel"])
def test_the_five_lines_run_from_the_installed_package(
    route: str, installed: dict[str, Path], tmp_path: Path
) -> None:
    venv = installed[route]
    module, spans = five_lines_in(venv, tmp_path / "app")
    assert Path(module).is_relative_to(venv), f"imported {module}, not the installed package"

    [db] = re.findall(r'from_conn_string\("([^"]+)"\)', FIVE_LINES[0])
    with sqlite3.connect(tmp_path / "app" / db) as conn:
        stored = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id = ?", (THREAD,)
        ).fetchone()[0]
    [run_span] = [s for s in spans if s["parent"] is None]
    assert run_span["name"] == RUN_SPAN
    assert {s["trace"] for s in spans} == {run_span["trace"]}
    puts = [s for s in spans if s["name"] == names.SPAN_PUT]
    assert stored == 4 and len(puts) == stored  # input, __start__, plan, act
    assert {s["parent"] for s in puts} == {run_span["id"]}


def test_the_zero_code_route_exports_from_the_installed_wheel(
    installed: dict[str, Path], tmp_path: Path
) -> None:
    """README's `opentelemetry-instrument python app.py` on the five lines without
    `instrument()` (the Instrumentor wraps the saver at `compile()`), OTLP to a real receiver."""
    [command] = ZERO_CODE
    env_vars = dict(w.split("=", 1) for w in command if re.match(r"^[A-Z_]+=", w))
    argv = [w for w in command if w.split("=", 1)[0] not in env_vars]
    assert argv == ["opentelemetry-instrument", "python", "app.py"]
    [code] = FIVE_LINES
    bare = code.replace("from langgraph.checkpoint.otel import instrument\n", "").replace(
        "instrument(saver)", "saver"
    )
    assert "instrument" not in bare
    (tmp_path / "app.py").write_text(PRELUDE + bare)
    with OTLPReceiver() as receiver:
        env = {**user_env(installed["from_wheel"]), **env_vars}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        run(argv, tmp_path, env, timeout=120)  # the SDK flushes at exit
        spans = receiver.received.spans()
        metrics = receiver.received.metric_points()
    assert {res.get("service.name") for res, _, _ in spans} == {env_vars["OTEL_SERVICE_NAME"]}
    span_names = [span.name for _, _, span in spans]
    assert span_names.count(RUN_SPAN) == 1
    assert span_names.count(names.SPAN_PUT) == 4
    [run_span] = [span for _, _, span in spans if span.name == RUN_SPAN]
    assert attrs(run_span.attributes)[names.CONVERSATION_ID] == THREAD
    assert {span.trace_id for _, _, span in spans} == {run_span.trace_id}
    assert names.METRIC_OPERATION_DURATION in metrics and names.METRIC_CHECKPOINT_SIZE in metrics


def test_the_inspector_extra_reads_what_the_five_lines_stored(
    installed: dict[str, Path], tmp_path: Path
) -> None:
    """`langgraph-otel` installed with `[sqlite,inspector]` only (no `[otlp]`) reads the thread
    the five lines stored."""
    five_lines_in(installed["from_wheel"], tmp_path / "app")
    [db] = re.findall(r'from_conn_string\("([^"]+)"\)', FIVE_LINES[0])
    venv = installed["inspector"]
    assert not list(venv.glob("lib/*/site-packages/opentelemetry_distro-*"))  # no [otlp] here
    source = f"sqlite:///{tmp_path / 'app' / db}"
    command = [str(venv / "bin" / "langgraph-otel"), "timeline", THREAD, "-s", source, "--json"]
    out = run(command, tmp_path, user_env(venv))
    checkpoints = json.loads(out)["checkpoints"]
    assert [c["nodes"] for c in checkpoints] == [[], ["__start__"], ["plan"], ["act"]]

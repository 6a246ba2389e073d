"""The package's layers, bottom to top: the base modules (`names`, `options`, `bounded`,
`migrations`) beside `_langgraph` (every LangGraph internal and string format), `analysis` (pure
logic), `core` (the wrapper), the public packages built on it by audience (`testing`: the resume
harness and replay; `export`: span and metric files; `inspector`: the `langgraph-otel` command;
`retention`: its plan, apply, archive and restore),
the public face of the package root (what a user of the wrapper needs, lazily loaded), and
`__main__` (the inspector's launcher). No module imports a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

import langgraph.checkpoint.otel
from suite_paths import REPO

PACKAGE = "langgraph.checkpoint.otel"
ROOT = Path(langgraph.checkpoint.otel.__file__).parent
RANK = {
    "base": 0,
    "_langgraph": 0,
    "analysis": 1,
    "core": 2,
    "testing": 3,
    "export": 3,
    "inspector": 3,
    "retention": 3,
    "facade": 4,
    "main": 5,
}
PUBLIC_PACKAGES = ("analysis", "testing", "export", "inspector")


def layer_of_module(relative: Path) -> str:
    if len(relative.parts) > 1:
        return relative.parts[0]
    return {"__init__": "facade", "__main__": "main"}.get(relative.stem, "base")


def layer_of_import(name: str) -> str | None:
    if name == PACKAGE:
        return "facade"
    if not name.startswith(PACKAGE + "."):
        return None
    first = name[len(PACKAGE) + 1 :].split(".")[0]
    return first if first in RANK else "base"


def internal_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            # `from langgraph.checkpoint.otel import names, instrument`: modules or the facade
            found += [
                f"{PACKAGE}.{a.name}"
                if (ROOT / f"{a.name}.py").exists() or (ROOT / a.name).is_dir()
                else PACKAGE
                for a in node.names
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return [n for n in found if n == PACKAGE or n.startswith(PACKAGE + ".")]


def test_no_import_runs_upward() -> None:
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        own = layer_of_module(relative)
        for name in internal_imports(path):
            target = layer_of_import(name)
            assert target is not None
            if RANK[target] > RANK[own]:
                upward.append(f"{relative} ({own}) imports {name} ({target})")
    assert upward == []


def test_every_module_is_in_a_layer() -> None:
    top = {p.name for p in ROOT.iterdir() if not p.name.startswith((".", "__pycache__"))}
    assert top == {
        "__init__.py",
        "__main__.py",
        "names.py",
        "options.py",
        "migrations.py",
        "bounded.py",
        "lazy.py",
        "py.typed",
        "_langgraph",
        "analysis",
        "core",
        "testing",
        "export",
        "inspector",
        "retention",
    }
    for layer in ("_langgraph", "analysis", "core", "testing", "export", "inspector", "retention"):
        assert (ROOT / layer / "__init__.py").read_text().startswith('"""')


ROOT_NAMES = [
    "DivergencePolicy",
    "InstrumentOptions",
    "InstrumentedSaver",
    "LangGraphCheckpointInstrumentor",
    "Migrations",
    "SchemaMigrationError",
    "ToolKeySpanProcessor",
    "__version__",
    "add_tool_key_processor",
    "astored_history",
    "instrument",
    "is_instrumented",
    "record_tool_start",
    "stored_history",
    "uninstrument",
]
"""The root's public face: what a user of the wrapper needs."""

MOVED_FROM_ROOT = {
    "CheckpointRecord": "analysis",
    "Finding": "analysis",
    "diff": "analysis",
    "divergences": "analysis",
    "history_records": "analysis",
    "resume_log": "analysis",
    "span_facts": "analysis",
    "ReplayFailed": "testing",
    "ReplayResult": "testing",
    "ResumeChecker": "testing",
    "ResumeReport": "testing",
    "aassert_replays": "testing",
    "acheck_resume": "testing",
    "areplay_thread": "testing",
    "assert_replays": "testing",
    "check_resume": "testing",
    "replay_thread": "testing",
    "HistogramPoint": "export",
    "MetricPoint": "export",
    "NumberPoint": "export",
    "OtlpJsonMetricExporter": "export",
    "OtlpJsonSpanExporter": "export",
    "SpanRecord": "export",
    "merge_histograms": "export",
    "read_metrics": "export",
    "read_spans": "export",
    "write_span_files": "export",
}
"""The names the root exported before 0.2 -> the public package that exports them now."""


def test_the_root_exports_exactly_the_wrappers_names() -> None:
    import langgraph.checkpoint.otel as root

    assert root.__all__ == ROOT_NAMES
    assert sorted(root._EXPORTS) == sorted(ROOT_NAMES)
    for name in root.__all__:
        assert getattr(root, name) is not None, name


def test_every_public_package_exports_what_it_lists() -> None:
    import importlib

    for package in ("analysis", "testing", "export"):
        module = importlib.import_module(f"{PACKAGE}.{package}")
        assert sorted(module.__all__) == sorted(module._EXPORTS), package
        for name in module.__all__:
            value = getattr(module, name)
            assert not isinstance(value, type(module)), f"{package}.{name} is a module"


def test_every_old_root_name_still_resolves_with_a_warning_naming_its_home() -> None:
    import importlib
    import warnings

    import langgraph.checkpoint.otel as root

    assert root._MOVED == MOVED_FROM_ROOT
    for name, package in MOVED_FROM_ROOT.items():
        home = f"{PACKAGE}.{package}"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(root, name)
        assert value is getattr(importlib.import_module(home), name), name
        assert [w.category for w in caught] == [DeprecationWarning], name
        assert f"{home}.{name}" in str(caught[0].message), caught[0].message
        assert caught[0].filename == __file__  # reported where the old name is used
        assert name not in root.__all__ and name not in dir(root)


DOCUMENTED = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "examples").glob("*.py")),
]


def test_the_docs_and_examples_import_only_the_public_face() -> None:
    """What README, docs and examples tell users to import is public: the root's names, the
    `names` contract, and the names of the public packages (`analysis`, `testing`, `export`);
    nothing they show reaches into an internal module."""
    import importlib
    import re

    public = {
        PACKAGE: set(importlib.import_module(PACKAGE).__all__) | {"names", *PUBLIC_PACKAGES},
        f"{PACKAGE}.names": None,  # any name of the contract
        **{
            f"{PACKAGE}.{p}": set(importlib.import_module(f"{PACKAGE}.{p}").__all__)
            for p in ("analysis", "testing", "export")
        },
    }
    internal, unknown = [], []
    for path in DOCUMENTED:
        text = path.read_text()
        for module, grouped, single in re.findall(
            r"from (langgraph\.checkpoint\.otel(?:\.[\w.]+)?) import (?:\(([^)]*)\)|([\w ,]+))",
            text,
        ):
            if module not in public:
                internal.append(f"{path.name}: {module}")
                continue
            allowed = public[module]
            for name in (n.strip() for n in (grouped or single).split(",")):
                if name and allowed is not None and name not in allowed:
                    unknown.append(f"{path.name}: {module}.{name}")
    assert internal == [] and unknown == []
